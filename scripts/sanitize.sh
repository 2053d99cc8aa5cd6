#!/usr/bin/env bash
# Builds named test targets under a sanitizer and runs them:
#   scripts/sanitize.sh asan   ASan + UBSan (clang, build-fuzz/, shared with
#                              scripts/fuzz.sh): the unit tests of base,
#                              runtime, engine, KV cache and tiers, the
#                              server's protocol and HTTP connections,
#                              tokenizer, Jinja, the structured-output
#                              grammars and the cpu plugin (entries, streams,
#                              every op and kernel path) — every parser of
#                              outside input and everything that owns memory
#   scripts/sanitize.sh tsan   ThreadSanitizer (GCC, build-tsan/) where there
#                              are threads: the HTTP connection's strand and
#                              handler pool, the runtime's streams and
#                              events, the cpu plugin's stream workers and
#                              kernels, the engine's scheduler thread, the
#                              KV tiers' copy and storage threads
# Any sanitizer report fails the run; suppressions live in scripts/tsan.supp,
# each with its reason. clang builds the cpu plugin's ISA files with the
# -m flags their `#pragma GCC target` names (plugins/cpu/CMakeLists.txt).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

kind="${1:-}"
case "$kind" in
  asan)
    dir=build-fuzz
    scripts/configure_clang_asan.sh
    unit_tests=(base_test runtime_test engine_core_test engine_test kv_test
                kv_storage_test server_protocol_test http_connection_test
                tokenizer_test jinja_test grammar_test cpu_plugin_test
                cpu_w8a8_kernels_test)
    export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    ;;
  tsan)
    dir=build-tsan
    unit_tests=(http_connection_test runtime_test cpu_plugin_test engine_test
                kv_test kv_storage_test)
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan.supp"
    if [[ ! -f "$dir/CMakeCache.txt" ]]; then
      # -O1 and minimal debug info: quick to build, readable stacks.
      cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None \
        -DCMAKE_C_FLAGS="-O1 -g1 -fsanitize=thread" \
        -DCMAKE_CXX_FLAGS="-O1 -g1 -fsanitize=thread" >/dev/null
    fi
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan" >&2
    exit 2
    ;;
esac
targets=("${unit_tests[@]}" tessera_plugin_cpu)

if ! out="$(cmake --build "$dir" --target "${targets[@]}" 2>&1)"; then
  printf '%s\n' "$out"
  echo "sanitize: the $kind build failed (output above)"
  exit 1
fi

# The tests run as many at a time as there are cores (most are single
# threaded); each one's result line is printed in the list's order.
run_one() {
  local t="$1" log="$dir/$1.$kind.log" start=$SECONDS
  if "$dir/tests/$t" >"$log" 2>&1; then
    echo "passed $((SECONDS - start))" >"$log.result"
  else
    echo "FAILED $((SECONDS - start))" >"$log.result"
  fi
}
jobs_max="$(nproc)"
for t in "${unit_tests[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
  rm -f "$dir/$t.$kind.log.result"
  run_one "$t" &
done
wait

status=0
for t in "${unit_tests[@]}"; do
  log="$dir/$t.$kind.log"
  read -r result seconds <"$log.result" || { result=FAILED; seconds=0; }
  if [[ "$result" == passed ]]; then
    echo "== $kind: $t passed ($seconds s)"
  else
    status=1
    echo "== $kind: $t FAILED ($seconds s); its log:"
    grep -E -A40 "ERROR: (Address|Thread|Leak)Sanitizer|WARNING: ThreadSanitizer|runtime error:|\[  FAILED  \]" \
      "$log" | head -n 120 || tail -n 60 "$log"
  fi
done
exit "$status"
