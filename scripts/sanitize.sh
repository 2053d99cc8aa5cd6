#!/usr/bin/env bash
# Builds named test targets under a sanitizer with clang and runs them:
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer
#                              (build-asan/)
#   scripts/sanitize.sh tsan   ThreadSanitizer (build-tsan/)
# The targets: the unit tests of base, kv, runtime, engine, the server's
# protocol and HTTP connections, tokenizer and Jinja, and the cpu plugin
# (streams and ops). Any sanitizer report fails the run; suppressions live in
# scripts/tsan.supp, each with its reason.
# Needs what scripts/setup.sh installs (clang-14, libclang-rt-14-dev).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

kind="${1:-}"
case "$kind" in
  asan)
    dir=build-asan
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    ;;
  tsan)
    dir=build-tsan
    flags="-fsanitize=thread"
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan.supp"
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan" >&2
    exit 2
    ;;
esac

# Unit tests only: the end-to-end suites would need the whole tree built
# twice more, which CI's time does not allow; http_connection_test drives
# the HTTP front's threads (I/O strand, handler pool, engine wake-ups)
# without a model.
unit_tests=(base_test kv_test runtime_test engine_test engine_core_test
            server_protocol_test http_connection_test tokenizer_test
            jinja_test cpu_plugin_test)

if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  # -O1 and line tables only: quick to build, readable stacks.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_C_FLAGS="-O1 -gline-tables-only $flags" \
    -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only $flags" >/dev/null
fi
if ! out="$(cmake --build "$dir" --target "${unit_tests[@]}" \
            tessera_plugin_cpu 2>&1)"; then
  printf '%s\n' "$out" >&2
  echo "sanitize: the $kind build failed (output above)" >&2
  exit 1
fi

status=0
for t in "${unit_tests[@]}"; do
  log="$dir/$t.log"
  start=$SECONDS
  if "$dir/tests/$t" >"$log" 2>&1; then
    echo "== $kind: $t passed ($((SECONDS - start)) s)"
  else
    status=1
    echo "== $kind: $t FAILED ($((SECONDS - start)) s); its log:" >&2
    grep -E -A40 "ERROR: (Address|Thread|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:|\[  FAILED  \]" \
      "$log" | head -n 120 >&2 || tail -n 60 "$log" >&2
  fi
done
exit "$status"
