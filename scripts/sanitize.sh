#!/usr/bin/env bash
# Builds named test targets under a sanitizer with clang and runs them:
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer
#                              (build-asan/, shared with scripts/fuzz.sh)
#   scripts/sanitize.sh tsan   ThreadSanitizer (build-tsan/)
# The targets: the unit tests of base, kv, runtime, engine, server protocol,
# tokenizer and Jinja, the cpu plugin (streams and ops), and the end-to-end
# suites that run a sanitized `tessera serve` against hostile clients and
# the HTTP front. Any sanitizer report fails the run; suppressions live in
# scripts/tsan.supp, each with its reason.
# Needs what scripts/setup.sh installs (clang-14, libclang-rt-14-dev).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

kind="${1:-}"
case "$kind" in
  asan)
    dir=build-asan
    # -fsanitize=fuzzer-no-link: the same objects serve scripts/fuzz.sh.
    flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link"
    extra=(-DTESSERA_FUZZ=ON)
    export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
    ;;
  tsan)
    dir=build-tsan
    flags="-fsanitize=thread"
    extra=()
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/tsan.supp"
    ;;
  *)
    echo "usage: scripts/sanitize.sh asan|tsan" >&2
    exit 2
    ;;
esac

unit_tests=(base_test kv_test runtime_test engine_test engine_core_test
            server_protocol_test tokenizer_test jinja_test cpu_plugin_test)
e2e_tests=(hostile_client_test http_front_test)

if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    "${extra[@]}" -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    >/dev/null
fi
if ! out="$(cmake --build "$dir" --target "${unit_tests[@]}" "${e2e_tests[@]}" \
            tessera tessera_plugin_cpu 2>&1)"; then
  printf '%s\n' "$out" >&2
  echo "sanitize: the $kind build failed (output above)" >&2
  exit 1
fi

status=0
for t in "${unit_tests[@]}" "${e2e_tests[@]}"; do
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
