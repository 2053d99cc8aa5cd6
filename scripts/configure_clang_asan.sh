#!/usr/bin/env bash
# Configures build-fuzz/: clang with AddressSanitizer, UndefinedBehaviorSanitizer
# and libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link), so
# that one build serves both the fuzzers (scripts/fuzz.sh) and the ASan +
# UBSan unit tests (scripts/sanitize.sh asan). -O1 and line tables: quick to
# build, readable stacks. Does nothing when build-fuzz/ is configured.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
flags="-O1 -gline-tables-only -fsanitize=address,undefined"
flags+=" -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link"
if [[ ! -f build-fuzz/CMakeCache.txt ]]; then
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DTESSERA_FUZZ=ON -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    >/dev/null
fi
