#!/usr/bin/env bash
# What tensor parallelism costs on one host, in the same run: the model
# runner (`tessera bench --one-batch`, overlapped decode) at --tp-size 1
# with all the cores in one process, against --tp-size N with the cores
# shared out (cores / N threads per rank), alternating A B for --rounds
# rounds so drift in machine load hits both.
#
#   bench/tp_scaling.sh --model-path DIR [--tp-size 2] [--batch-sizes 1,8]
#       [--input-len 64] [--output-len 16] [--rounds 2] [--smoke]
#
# Prints one JSON object: per batch size, each side's decode tokens/s per
# round, their medians, and the ratio tp-N / tp-1 (1.0: TP costs nothing;
# the issue's target is >= 0.9 for N = 2). --smoke: input 8, output 2, one
# round (seconds). Needs python3 for the JSON.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model="" tp=2 batches="1,8" input=64 output=16 rounds=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model-path) model="$2"; shift 2 ;;
    --tp-size) tp="$2"; shift 2 ;;
    --batch-sizes) batches="$2"; shift 2 ;;
    --input-len) input="$2"; shift 2 ;;
    --output-len) output="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --smoke) input=8; output=2; rounds=1; shift ;;
    *) echo "unknown flag $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -n "$model" ]] || { echo "--model-path DIR is required" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for round in $(seq 1 "$rounds"); do
  for size in 1 "$tp"; do
    build/bin/tessera bench --one-batch --model-path "$model" --batch-size "$batches" \
        --input-len "$input" --output-len "$output" --no-bandwidth --tp-size "$size" \
        --json >"$work/tp${size}_round${round}.json" 2>"$work/err.log" \
      || { cat "$work/err.log" >&2; exit 1; }
  done
done
python3 - "$work" "$tp" "$rounds" <<'PY'
import json, statistics, sys
work, tp, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def rates(size):
    out = {}
    for r in range(1, rounds + 1):
        d = json.load(open(f"{work}/tp{size}_round{r}.json"))
        for row in d["results"]:
            if row["overlap"]:
                out.setdefault(row["batch_size"], []).append(row["decode_tokens_per_s"])
    return out
one, many = rates(1), rates(tp)
result = {"tp_size": tp, "results": []}
for b in sorted(one):
    m1, mn = statistics.median(one[b]), statistics.median(many[b])
    result["results"].append({"batch_size": b, "tp1_decode_tokens_per_s": one[b],
                              f"tp{tp}_decode_tokens_per_s": many[b],
                              "ratio": mn / m1})
print(json.dumps(result, indent=1))
PY
