#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/, then runs each for SECONDS
# (default 30) on its seed corpus (fuzz/corpus/NAME, plus build-fuzz/corpus/
# NAME where new inputs accumulate between runs). Exits 1 with the crashing
# input saved under build-fuzz/artifacts/ when a harness finds a crash, a
# hang (over 60 s for one input), a leak or a sanitizer report.
#
#   scripts/fuzz.sh [SECONDS] [NAME ...]     NAME: request_body sse_reader
#                                            tokenizer_json jinja_template
#                                            model_files grammar gguf_file
#                                            plugin_table
#                                            (default: all)
# Needs what scripts/setup.sh installs (clang-14, libclang-rt-14-dev).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

seconds="${1:-30}"
shift || true
names=("$@")
if ((${#names[@]} == 0)); then
  names=(request_body sse_reader tokenizer_json jinja_template model_files grammar
         gguf_file plugin_table)
fi

scripts/configure_clang_asan.sh
if ! out="$(cmake --build build-fuzz --target fuzzers 2>&1)"; then
  printf '%s\n' "$out"
  echo "fuzz: build failed (output above)"
  exit 1
fi

# Extra read-only seeds: real chat templates from the Jinja tests.
declare -A extra_seeds=([jinja_template]="src/tokenizer/jinja/testdata")

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1"
status=0
for name in "${names[@]}"; do
  mkdir -p "build-fuzz/corpus/$name" "build-fuzz/artifacts"
  seeds=("fuzz/corpus/$name")
  if [[ -n "${extra_seeds[$name]:-}" ]]; then seeds+=("${extra_seeds[$name]}"); fi
  log="build-fuzz/$name.log"
  echo "== fuzz: $name for ${seconds} s"
  if "build-fuzz/fuzz/${name}_fuzzer" -max_total_time="$seconds" \
      -timeout=60 -rss_limit_mb=6144 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="build-fuzz/artifacts/$name-" \
      "build-fuzz/corpus/$name" "${seeds[@]}" >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|INITED|DONE" \
      "$log" | sed 's/^/   /' || true
  else
    status=1
    tail -n 60 "$log"
    echo "fuzz: $name failed; the input is in build-fuzz/artifacts/"
    # CI keeps only the log: the input itself, to reproduce it anywhere.
    for input in build-fuzz/artifacts/"$name"-*; do
      [[ -f "$input" ]] || continue
      echo "fuzz: $input as base64 (first 4 KB):"
      head -c 3072 "$input" | base64 -w 0
      echo
    done
  fi
done
exit "$status"
