#!/bin/sh
# Runs a `tessera plugin-check` command and passes only when it exits with
# EXPECTED_RC and its output matches MUST_MATCH (an extended regex). When
# ONLY_FAILS is not empty, every "[FAIL]" line must match it too (so a
# faulty plugin fails for the right reason and nothing else).
#
#   expect_plugin_check.sh EXPECTED_RC MUST_MATCH ONLY_FAILS command...
#
# Exit 77 (CTest skip) when the command exits 77 but 77 was not expected
# (the wrapped plugin's hardware is absent).
expected=$1
must_match=$2
only_fails=$3
shift 3
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" = 77 ] && [ "$expected" != 77 ]; then
  echo "SKIPPED: the plugin reports no hardware (exit 77)"
  exit 77
fi
if [ "$rc" != "$expected" ]; then
  echo "FAILED: plugin-check exited $rc, expected $expected"
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$must_match"; then
  echo "FAILED: the output does not match /$must_match/"
  exit 1
fi
if [ -n "$only_fails" ]; then
  stray=$(printf '%s\n' "$out" | grep -E '^\[FAIL\]' | grep -Ev -- "$only_fails")
  if [ -n "$stray" ]; then
    echo "FAILED: checks failed that should not have (only /$only_fails/ may):"
    printf '%s\n' "$stray"
    exit 1
  fi
fi
echo "OK: exit $rc and the output matches /$must_match/"
exit 0
