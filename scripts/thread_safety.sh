#!/usr/bin/env bash
# clang's thread-safety analysis over the code that shares state between
# threads: every source file of src/base, src/runtime, src/kv, src/engine,
# src/metrics, src/disagg and src/router, and the server's HTTP front, compiled with -fsyntax-only
# -Wthread-safety -Werror (the lock annotations are base/thread_annotations.h:
# GUARDED_BY, REQUIRES, EXCLUDES, ...). GCC ignores the annotations, so this
# is the check that they hold. Quiet on success apart from one summary line.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
clang="${CLANGXX:-clang++-14}"
files=(src/base/*.cc src/runtime/*.cc src/kv/*.cc src/engine/*.cc src/metrics/*.cc
       src/disagg/*.cc src/router/*.cc
       src/server/http_connection.cc src/server/http_server.cc
       src/server/stream_pump.cc src/server/engine_bridge.cc)
sources=()
for f in "${files[@]}"; do
  [[ "$f" == *_test.cc ]] || sources+=("$f")
done
flags=(-fsyntax-only -std=c++20 -Isrc -Iinclude -DSPDLOG_FMT_EXTERNAL
       -DSPDLOG_COMPILED_LIB -DFMT_SHARED -Wthread-safety -Werror=thread-safety
       -Wno-unknown-warning-option)
if ! printf '%s\n' "${sources[@]}" |
    xargs -P "$(nproc)" -I{} "$clang" "${flags[@]}" {} 2>&1; then
  echo "thread-safety: clang's analysis failed (output above)" >&2
  exit 1
fi
echo "== thread-safety: ${#sources[@]} files clean"
