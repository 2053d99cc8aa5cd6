#!/usr/bin/env bash
# Builds named test targets under a sanitizer and runs them:
#   scripts/sanitize.sh asan       ASan + UBSan (clang, build-fuzz/, shared with
#                                  scripts/fuzz.sh): the unit tests of base,
#                                  engine core, the server's protocol and HTTP
#                                  connections, tokenizer, Jinja and the
#                                  structured-output grammars — every
#                                  parser of outside input
#   scripts/sanitize.sh tsan       ThreadSanitizer (GCC, build-tsan/) where there
#                                  are threads: the HTTP connection's strand and
#                                  handler pool, the runtime's streams and
#                                  events, the cpu plugin's stream workers and
#                                  kernels, the engine's scheduler thread, the
#                                  KV tiers' copy and storage threads
#   scripts/sanitize.sh asan-full  ASan + UBSan (GCC, build-asan/) on all of
#                                  those plus runtime, engine and the cpu plugin
#                                  (streams and ops); GCC because the cpu
#                                  plugin's kernels use GCC's target pragmas.
#                                  Too slow for CI's budget; run it locally.
# Any sanitizer report fails the run; suppressions live in scripts/tsan.supp,
# each with its reason.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

kind="${1:-}"
common_asan="detect_leaks=1:halt_on_error=1"
case "$kind" in
  asan)
    dir=build-fuzz
    scripts/configure_clang_asan.sh
    # (kv_test needs the cpu plugin, which clang does not build: asan-full
    # and tsan cover it.)
    unit_tests=(base_test engine_core_test server_protocol_test
                http_connection_test tokenizer_test jinja_test grammar_test)
    targets=("${unit_tests[@]}")
    export ASAN_OPTIONS="$common_asan"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    ;;
  asan-full|tsan)
    if [[ "$kind" == tsan ]]; then
      dir=build-tsan
      flags="-fsanitize=thread"
      unit_tests=(http_connection_test runtime_test cpu_plugin_test engine_test
                  kv_test kv_storage_test)
      export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan.supp"
    else
      dir=build-asan
      flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
      unit_tests=(base_test kv_test kv_storage_test runtime_test engine_test
                  engine_core_test server_protocol_test http_connection_test tokenizer_test
                  jinja_test cpu_plugin_test)
      export ASAN_OPTIONS="$common_asan"
      export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    fi
    targets=("${unit_tests[@]}" tessera_plugin_cpu)
    if [[ ! -f "$dir/CMakeCache.txt" ]]; then
      # -O1 and minimal debug info: quick to build, readable stacks.
      cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None \
        -DCMAKE_C_FLAGS="-O1 -g1 $flags" -DCMAKE_CXX_FLAGS="-O1 -g1 $flags" \
        >/dev/null
    fi
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan|asan-full" >&2
    exit 2
    ;;
esac

if ! out="$(cmake --build "$dir" --target "${targets[@]}" 2>&1)"; then
  printf '%s\n' "$out"
  echo "sanitize: the $kind build failed (output above)"
  exit 1
fi

status=0
for t in "${unit_tests[@]}"; do
  log="$dir/$t.$kind.log"
  start=$SECONDS
  if "$dir/tests/$t" >"$log" 2>&1; then
    echo "== $kind: $t passed ($((SECONDS - start)) s)"
  else
    status=1
    echo "== $kind: $t FAILED ($((SECONDS - start)) s); its log:"
    grep -E -A40 "ERROR: (Address|Thread|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:|\[  FAILED  \]" \
      "$log" | head -n 120 || tail -n 60 "$log"
  fi
done
exit "$status"
