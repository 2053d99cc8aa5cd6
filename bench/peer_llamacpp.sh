#!/usr/bin/env bash
# Tessera vs llama.cpp on the same weights, in the same run, on this CPU.
#
#   bench/peer_llamacpp.sh --model-path DIR [--types bf16,q8_0] [--threads 2]
#       [--input-len 512] [--output-len 32] [--batch-sizes 1,8] [--rounds 2]
#       [--check-tokens 32] [--tessera-quantization auto] [--isa ISA]
#       [--work-dir DIR] [--output-file F] [--smoke]
#
# 1. Greedy check on stories260k (../shared/models/stories260k, F32): the
#    prompt "Once upon a time" is tokenized by both (must match), then
#    `tessera generate` (temperature 0) and llamacpp_runner decode
#    --check-tokens tokens each; the ids must be identical or the script
#    stops (exit 1) — a wrong GGUF conversion shows up here first.
# 2. For each --types T: `tessera convert-gguf --type T` writes the model as
#    GGUF (f32, f16, bf16, q8_0; other llama.cpp types such as q4_0 and
#    q4_k_m are written by llama.cpp's quantizer from an f16 file); a greedy check on the model itself is reported (how many leading
#    tokens agree; informational, since random-weight models have tiny logit
#    margins and T may differ from what Tessera runs), then --rounds rounds
#    of A B per --batch-sizes B (Tessera `bench --one-batch --batch-size B`,
#    then `llamacpp_runner --batch-size B`), alternating so drift in machine
#    load hits both. Both use --threads threads, the same B prompts of
#    --input-len random ids (same generator and seed), prefilled in one
#    call, then --output-len decode steps of B tokens (aggregate tokens/s).
# 3. Prints one JSON object: per type and batch size, each engine's prefill
#    and decode tokens/s per round and their medians, and Tessera /
#    llama.cpp ratios (> 1: Tessera is faster).
#
# Both engines run the same GGUF file of type T: Tessera loads it itself
# (`--model-path FILE.gguf`, `--quantization auto`: F32/F16/BF16 as stored,
# Q8_0 as int8 weights with a scale per 32 — the same numbers — multiplied
# as llama.cpp does, activations quantised per 32 too: w8a8_int8; Q4_0 as
# 4-bit weights, its blocks as they are: int4; K-quants re-quantized to
# int8, w8a8_int8).
# --tessera-quantization Q passes another --quantization to Tessera (e.g.
# int8: weight-only, activations in floating point).
# --isa ISA holds both engines to one x86 instruction set: Tessera with
# TESSERA_CPU_ISA=ISA, llama.cpp with its CPU build for it (llamacpp_runner
# --cpu-variant): scalar -> sse42, avx2 -> haswell, avx512 -> skylakex,
# avx512bf16 -> zen4. Without it each picks the best this CPU runs. The
# report names the CPU (from /proc/cpuinfo) and the ISA.
# --smoke: stories260k only, F32, input 16, output 4, one round (seconds;
# for CI).
#
# Caveat: ggml's CPU threads meet at a spinning barrier after every op, so
# with --threads equal to the cores and other processes running, a
# preempted thread stalls the other for a scheduler slice per op and
# llama.cpp's decode can drop by 10-1000x (seen on a shared 2-vCPU box).
# The report records the load average; compare on an idle machine, or
# also with --threads 1, before reading much into a decode ratio.
#
# Binaries: $TESSERA (default build/bin/tessera) and $LLAMACPP_RUNNER
# (default build/bin/llamacpp_runner, built when `npm ci --ignore-scripts`
# has installed the pinned llama.cpp). JSON is read with node (installed by
# scripts/setup.sh). Exit 0: done; 1: a check or a run failed; 2: bad flags
# or missing binaries.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tessera="${TESSERA:-$root/build/bin/tessera}"
runner="${LLAMACPP_RUNNER:-$root/build/bin/llamacpp_runner}"
shared="${TESSERA_SHARED_DIR:-$root/../shared}"
stories="$shared/models/stories260k"

model_path=""
types="bf16,q8_0"
threads=2
input_len=512
output_len=32
rounds=2
check_tokens=32
batch_sizes="1"
work_dir=""
output_file=""
smoke=0
tessera_quant=auto
isa=""

usage() { sed -n '2,40p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
while (($#)); do
  case "$1" in
    --model-path) model_path="$2"; shift 2 ;;
    --types) types="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --input-len) input_len="$2"; shift 2 ;;
    --output-len) output_len="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --batch-sizes) batch_sizes="$2"; shift 2 ;;
    --check-tokens) check_tokens="$2"; shift 2 ;;
    --tessera-quantization) tessera_quant="$2"; shift 2 ;;
    --isa) isa="$2"; shift 2 ;;
    --work-dir) work_dir="$2"; shift 2 ;;
    --output-file) output_file="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown flag $1" >&2; usage; exit 2 ;;
  esac
done
if ((smoke)); then
  model_path="${model_path:-$stories}"
  types="f32"; input_len=16; output_len=4; rounds=1; check_tokens=16
  batch_sizes="1"
fi
if [[ -z "$model_path" ]]; then
  echo "error: --model-path is required (or --smoke)" >&2; exit 2
fi
for bin in "$tessera" "$runner"; do
  if [[ ! -x "$bin" ]]; then
    echo "error: $bin not found; build it (scripts/setup.sh builds both once" \
         "npm ci --ignore-scripts has installed llama.cpp)" >&2
    exit 2
  fi
done
if [[ ! -d "$stories" ]]; then
  echo "error: $stories missing (set TESSERA_SHARED_DIR)" >&2; exit 2
fi
command -v node >/dev/null || { echo "error: node not found" >&2; exit 2; }
runner_isa=()
case "$isa" in
  "") ;;
  scalar) runner_isa=(--cpu-variant sse42) ;;
  avx2) runner_isa=(--cpu-variant haswell) ;;
  avx512) runner_isa=(--cpu-variant skylakex) ;;
  avx512bf16) runner_isa=(--cpu-variant zen4) ;;
  *) echo "error: --isa $isa: one of scalar, avx2, avx512, avx512bf16" >&2; exit 2 ;;
esac
if [[ -n "$isa" ]]; then export TESSERA_CPU_ISA="$isa"; fi
cpu_model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)"

cleanup=""
if [[ -z "$work_dir" ]]; then
  work_dir="$(mktemp -d)"; cleanup="$work_dir"
fi
trap '[[ -n "$cleanup" ]] && rm -rf "$cleanup"' EXIT
mkdir -p "$work_dir"
export TESSERA_PLUGIN_OPTIONS="threads=$threads"

# js EXPR: evaluates EXPR with `o` = the JSON object read from stdin.
js() { node -e "const o=JSON.parse(require('fs').readFileSync(0,'utf8'));
const r=($1); process.stdout.write(typeof r==='string'?r:JSON.stringify(r));"; }
log() { echo "peer: $*" >&2; }

# convert DIR TYPE OUT
# convert DIR TYPE OUT: f32 / f16 / bf16 / q8_0 by Tessera's writer; any
# other llama.cpp type (q4_0, q4_k_m, q5_k_m, q6_k, ...) by llama.cpp's own
# quantizer from an f16 conversion (as llama.cpp users make such files).
convert() {
  case "$2" in
    f32|f16|bf16|q8_0)
      "$tessera" convert-gguf --model-path "$1" --type "$2" --out "$3" --force >&2 ;;
    *)
      "$tessera" convert-gguf --model-path "$1" --type f16 --out "$3.f16" --force >&2
      "$runner" --model "$3.f16" --quantize "$2" --out "$3" >&2
      rm -f "$3.f16" ;;
  esac
}

# greedy DIR GGUF PROMPT N -> {"tokenize_equal", "tessera", "llamacpp",
# "agree"}: leading output ids equal.
greedy() {
  local dir="$1" gguf="$2" prompt="$3" n="$4"
  local t_tok l_tok t_gen ids l_gen
  local request
  request="$(node -e 'process.stdout.write(JSON.stringify({prompt: process.argv[1]}))' "$prompt")"
  t_tok="$("$tessera" tokenize --model-path "$dir" --request "$request" \
           | js 'o.tokens')"
  l_tok="$("$runner" --model "$gguf" --tokenize "$prompt" | js 'o.tokens')"
  t_gen="$("$tessera" generate --model-path "$dir" --prompt "$prompt" \
           --max-new-tokens "$n" --temperature 0 --ignore-eos --json \
           2>/dev/null | js 'o.output_ids')"
  ids="$(printf '%s' "$t_tok" | js 'o.join(",")')"
  local l_run
  l_run="$("$runner" --model "$gguf" --prompt-ids "$ids" \
           --decode-steps "$((n - 1))" --threads "$threads")"
  l_gen="$(printf '%s' "$l_run" | js 'o.output_ids')"
  node -e '
    const [tt, lt, tg, lg] = process.argv.slice(1, 5).map(JSON.parse);
    let agree = 0;
    while (agree < tg.length && tg[agree] === lg[agree]) agree++;
    process.stdout.write(JSON.stringify({
      tokenize_equal: JSON.stringify(tt) === JSON.stringify(lt),
      prompt_ids: tt, llamacpp_prompt_ids: lt,
      tessera: tg, llamacpp: lg, agree, of: tg.length,
      library: process.argv[5]}));' \
    "$t_tok" "$l_tok" "$t_gen" "$l_gen" "$(printf '%s' "$l_run" | js 'o.library')"
}

load_start="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)"

# 1. Greedy equality on stories260k, F32.
log "greedy check: stories260k f32"
convert "$stories" f32 "$work_dir/stories260k.f32.gguf"
check="$(greedy "$stories" "$work_dir/stories260k.f32.gguf" \
         "Once upon a time" "$check_tokens")"
if [[ "$(printf '%s' "$check" | js 'o.tokenize_equal && o.agree === o.of')" \
      != "true" ]]; then
  log "MISMATCH on stories260k: $check"
  exit 1
fi
llamacpp_library="$(printf '%s' "$check" | js 'o.library')"
log "stories260k: tokenization and $check_tokens greedy tokens identical"

# 2. Per type: convert, check, then A B rounds.
results="[]"
IFS=',' read -r -a type_list <<<"$types"
for type in "${type_list[@]}"; do
  gguf="$work_dir/model.$type.gguf"
  log "converting $model_path to $type"
  convert "$model_path" "$type" "$gguf"
  model_check="$(greedy "$model_path" "$gguf" "Once upon a time" \
                 "$check_tokens")"
  log "$type greedy agreement: $(printf '%s' "$model_check" | js '`${o.agree}/${o.of}`')"
  # Tessera loads the same GGUF file (--quantization auto: q8_0 as int8
  # weights with a scale per 32, the numbers the file holds, run w8a8).
  IFS=',' read -r -a batch_list <<<"$batch_sizes"
  for batch in "${batch_list[@]}"; do
    runs="[]"
    for ((r = 1; r <= rounds; ++r)); do
      log "$type batch $batch round $r/$rounds: tessera (--quantization $tessera_quant)"
      a="$("$tessera" bench --one-batch --model-path "$gguf" \
           --quantization "$tessera_quant" --batch-size "$batch" \
           --input-len "$input_len" --output-len "$output_len" \
           --no-bandwidth --json 2>/dev/null | js 'o.results[0]')"
      log "$type batch $batch round $r/$rounds: llama.cpp"
      b="$("$runner" --model "$gguf" --threads "$threads" --batch-size "$batch" \
           "${runner_isa[@]}" --random-prompt "$input_len" --seed 0 --decode-steps "$output_len")"
      runs="$(node -e '
        const [runs, a, b] = process.argv.slice(1).map(JSON.parse);
        runs.push({tessera: {prefill: a.prefill_tokens_per_s,
                             decode: a.decode_tokens_per_s},
                   llamacpp: {prefill: b.prefill_tokens_per_s,
                              decode: b.decode_tokens_per_s}});
        process.stdout.write(JSON.stringify(runs));' "$runs" "$a" "$b")"
    done
    results="$(node -e '
      const [results, runs, type, quant, batch, check] = process.argv.slice(1);
      const all = JSON.parse(results), rs = JSON.parse(runs), c = JSON.parse(check);
      const median = xs => { const s = [...xs].sort((x, y) => x - y);
        const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
      const pick = (e, k) => rs.map(r => r[e][k]);
      const med = e => ({prefill_tokens_per_s: median(pick(e, "prefill")),
                         decode_tokens_per_s: median(pick(e, "decode")),
                         prefill_runs: pick(e, "prefill"),
                         decode_runs: pick(e, "decode")});
      const t = med("tessera"), l = med("llamacpp");
      all.push({llamacpp_type: type, tessera_quantization: quant,
                batch_size: +batch, tessera: t, llamacpp: l,
                ratio_tessera_over_llamacpp: {
                  prefill: t.prefill_tokens_per_s / l.prefill_tokens_per_s,
                  decode: t.decode_tokens_per_s / l.decode_tokens_per_s},
                greedy_agreement: {agree: c.agree, of: c.of}});
      process.stdout.write(JSON.stringify(all));' \
      "$results" "$runs" "$type" "$tessera_quant" "$batch" "$model_check")"
  done
done

load_end="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || true)"
report="$(node -e '
  const [results, check, model, threads, inLen, outLen, rounds, lib,
         loadStart, loadEnd, cpu, isa] = process.argv.slice(1);
  const c = JSON.parse(check);
  process.stdout.write(JSON.stringify({
    benchmark: "peer_llamacpp", model, threads: +threads, cpu,
    isa: isa || "best of each engine",
    input_len: +inLen, output_len: +outLen, rounds: +rounds,
    llamacpp_library: lib,
    // Other processes on the machine: 1/5/15-minute load averages.
    loadavg: {start: loadStart, end: loadEnd},
    stories260k_greedy: {tokens: c.of, identical: c.agree === c.of},
    results: JSON.parse(results)}, null, 2));' \
  "$results" "$check" "$model_path" "$threads" "$input_len" "$output_len" \
  "$rounds" "$llamacpp_library" "$load_start" "$load_end" "$cpu_model" "$isa")"
printf '%s\n' "$report"
if [[ -n "$output_file" ]]; then printf '%s\n' "$report" >"$output_file"; fi
