#!/usr/bin/env bash
# What PD disaggregation buys, in one run: `tessera bench --dataset-name
# random` against
#   aggregated  one `tessera serve` with --cpu-threads 2*T;
#   pd          a prefill server and a decode server (--cpu-threads T each,
#               so both use the same cores as the aggregated one), KV moved
#               by UCX, `tessera router` in front;
# run A B A B (--rounds pairs) so a noisy machine hits both alike.
#
#   bench/pd_disaggregation.sh --model-path DIR [--num-prompts 32]
#       [--input-len 256] [--output-len 64] [--max-concurrency 8]
#       [--request-rate inf (all at once)] [--cpu-threads 1] [--rounds 2]
#       [--smoke]
#
# Prints one JSON object: each configuration's ITL (median, p99), TTFT
# (median, p99) and output throughput per round, the prefill server's KV
# transfer totals (bytes, seconds on the wire: puts queued to the peer's
# flush and completion, GB/s) against this machine's 2-thread memcpy
# (`tessera bench-comm`'s reference, same run), and the ratios
#   pd_vs_aggregated_itl_p99   (< 1: decode no longer stalls behind prefills)
#   pd_vs_aggregated_ttft_median, pd_vs_aggregated_throughput.
# --smoke: 4 prompts of 16 + 4 tokens, one round (seconds on stories260k).
# Needs python3 and curl (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model="" prompts=32 ilen=256 olen=64 conc=8 rate=inf threads=1 rounds=2
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model-path) model="$2"; shift 2 ;;
    --num-prompts) prompts="$2"; shift 2 ;;
    --input-len) ilen="$2"; shift 2 ;;
    --output-len) olen="$2"; shift 2 ;;
    --max-concurrency) conc="$2"; shift 2 ;;
    --request-rate) rate="$2"; shift 2 ;;
    --cpu-threads) threads="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --smoke) prompts=4; ilen=16; olen=4; conc=2; rounds=1; shift ;;
    *) echo "unknown flag $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ -n "$model" ]] || { echo "--model-path DIR is required" >&2; exit 2; }
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# start NAME PORT CMD...: runs a tessera subcommand, waits for /health.
start() {
  local name="$1" port="$2"; shift 2
  build/bin/tessera "$@" --port "$port" >"$work/$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      last_pid=$pid
      return
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "$name did not become healthy" >&2; cat "$work/$name.log" >&2; exit 1
}
stop() { for p in "$@"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
bench() {  # bench NAME PORT
  build/bin/tessera bench --port "$2" --dataset-name random \
      --num-prompts "$prompts" --random-input-len "$ilen" \
      --random-output-len "$olen" --random-range-ratio 1 \
      --max-concurrency "$conc" --request-rate "$rate" --seed 1 \
      --json --output-file "$work/$1.json" >/dev/null 2>"$work/$1.bench.log" \
    || { cat "$work/$1.bench.log" >&2; exit 1; }
}
serve=(serve --model-path "$model" --log-interval 0)

for r in $(seq 1 "$rounds"); do
  port="$(free_port)"
  start "aggregated_$r" "$port" "${serve[@]}" --cpu-threads "$((2 * threads))"
  agg=$last_pid
  bench "aggregated_$r" "$port"
  stop "$agg"

  pport="$(free_port)" dport="$(free_port)" rport="$(free_port)" bport="$(free_port)"
  start "prefill_$r" "$pport" "${serve[@]}" --cpu-threads "$threads" \
      --disaggregation-mode prefill --disaggregation-bootstrap-port "$bport"
  pre=$last_pid
  start "decode_$r" "$dport" "${serve[@]}" --cpu-threads "$threads" \
      --disaggregation-mode decode
  dec=$last_pid
  start "router_$r" "$rport" router --prefill "http://127.0.0.1:$pport" "$bport" \
      --decode "http://127.0.0.1:$dport"
  rou=$last_pid
  bench "pd_$r" "$rport"
  curl -sf "http://127.0.0.1:$pport/server_info" >"$work/pd_$r.prefill_info.json"
  stop "$rou" "$pre" "$dec"
done

# The reference for the KV transfer rate: this machine's 2-thread memcpy.
build/bin/tessera bench-comm --smoke --json --tp-size 2 >"$work/memcpy.json" \
    2>"$work/memcpy.log" || { cat "$work/memcpy.log" >&2; exit 1; }

python3 - "$work" "$rounds" "$prompts" "$ilen" "$olen" "$conc" "$threads" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
prompts, ilen, olen, conc, threads = map(int, sys.argv[3:])
def run(name):
    d = json.load(open(f"{work}/{name}.json"))
    return {"itl_ms_median": d["itl_ms"]["median"], "itl_ms_p99": d["itl_ms"]["p99"],
            "ttft_ms_median": d["ttft_ms"]["median"], "ttft_ms_p99": d["ttft_ms"]["p99"],
            "output_throughput": d["output_throughput"], "failed": d["failed"],
            "completed": d["completed"]}
out = {"workload": {"num_prompts": prompts, "input_len": ilen, "output_len": olen,
                    "max_concurrency": conc, "cpu_threads_per_pd_server": threads,
                    "cpu_threads_aggregated": 2 * threads, "rounds": rounds},
       "aggregated": [run(f"aggregated_{r}") for r in range(1, rounds + 1)],
       "pd": [run(f"pd_{r}") for r in range(1, rounds + 1)]}
bytes_ = secs = transfers = 0
for r in range(1, rounds + 1):
    info = json.load(open(f"{work}/pd_{r}.prefill_info.json"))["disaggregation"]
    bytes_ += info["transfer_bytes"]; secs += info["transfer_seconds"]
    transfers += info["transfers"]
memcpy_gbps = json.load(open(f"{work}/memcpy.json"))["memcpy_gbps"]
gbps = bytes_ / secs / 1e9 if secs > 0 else 0
out["kv_transfer"] = {"transfers": transfers, "bytes": bytes_,
                      "seconds_on_wire": secs,
                      "ms_per_transfer": 1e3 * secs / transfers if transfers else 0,
                      "gbps": gbps, "memcpy_gbps": memcpy_gbps,
                      "vs_memcpy": gbps / memcpy_gbps if memcpy_gbps > 0 else 0}
def med(cfg, key):
    return statistics.median(x[key] for x in out[cfg])
def ratio(key):
    a = med("aggregated", key)
    return med("pd", key) / a if a > 0 else None
out["pd_vs_aggregated_itl_p99"] = ratio("itl_ms_p99")
out["pd_vs_aggregated_ttft_median"] = ratio("ttft_ms_median")
out["pd_vs_aggregated_throughput"] = ratio("output_throughput")
failed = sum(x["failed"] for c in ("aggregated", "pd") for x in out[c])
print(json.dumps(out, indent=1))
sys.exit(1 if failed or transfers == 0 else 0)
PY
