#!/usr/bin/env bash
# What the hierarchical KV cache buys on a multi-turn workload, in one run:
# `tessera bench --dataset-name multi-turn` against `tessera serve` with the
# device KV pool well under the working set, in five configurations:
#   device      device pool only (every evicted prefix is recomputed);
#   host        + --enable-hierarchical-cache (host tier --hicache-ratio);
#   file_cold   + the file storage tier, a fresh directory;
#   file_warm   the same server restarted on that directory, same prompts;
#   redis_a     + the redis tier (a redis-server started here), server A;
#   redis_b     a second server on the same Redis, A's conversations.
#
#   bench/hicache_multiturn.sh --model-path DIR [--conversations 6]
#       [--rounds 6] [--question-len 256] [--output-len 8]
#       [--max-total-tokens 2368] [--page-size 16] [--max-concurrency 2]
#       [--hicache-ratio 4] [--smoke]
#
# Prints one JSON object: each configuration's output throughput, mean
# TTFT and per-tier hit rate, and the ratios the HiCache issue targets:
#   host_vs_device_throughput (>= 1.7), host_vs_device_ttft (<= 1/3),
#   file_warm_vs_cold_ttft (<= 1/3), redis_b_vs_a_ttft (<= 1/3).
# The working set is conversations x rounds x (question + output) tokens
# (every conversation stays live, its rounds interleaved with the others');
# the default pool is a quarter of the default working set (9504 tokens),
# still big enough for the longest prompt (1576 tokens). --smoke: 2
# conversations x 2 rounds of 16 + 4 tokens on a 64-token pool (seconds on
# stories260k). Needs python3 and redis-server (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model="" convs=6 rounds=6 qlen=256 olen=8 pool=2368 page=16 conc=2 ratio=4
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model-path) model="$2"; shift 2 ;;
    --conversations) convs="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --question-len) qlen="$2"; shift 2 ;;
    --output-len) olen="$2"; shift 2 ;;
    --max-total-tokens) pool="$2"; shift 2 ;;
    --page-size) page="$2"; shift 2 ;;
    --max-concurrency) conc="$2"; shift 2 ;;
    --hicache-ratio) ratio="$2"; shift 2 ;;
    --smoke) convs=2; rounds=2; qlen=16; olen=4; pool=64; page=4; conc=2; shift ;;
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
# serve NAME FLAGS...: starts a server, waits for /health, sets $port.
serve() {
  local name="$1"; shift
  port="$(free_port)"
  build/bin/tessera serve --model-path "$model" --port "$port" \
      --max-total-tokens "$pool" --page-size "$page" --log-interval 0 "$@" \
      >"$work/$name.log" 2>&1 &
  pids+=($!)
  server_pid=$!
  for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then return; fi
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/$name.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "server $name did not become healthy" >&2; cat "$work/$name.log" >&2; exit 1
}
stop() { kill "$1"; wait "$1" 2>/dev/null || true; }
bench() {
  build/bin/tessera bench --port "$port" --dataset-name multi-turn \
      --num-prompts "$convs" --multi-turn-rounds "$rounds" \
      --random-input-len "$qlen" --random-output-len "$olen" \
      --max-concurrency "$conc" --seed 1 --json --output-file "$work/$1.json" \
      >/dev/null 2>"$work/$1.bench.log" \
    || { cat "$work/$1.bench.log" >&2; exit 1; }
}
hicache=(--enable-hierarchical-cache --hicache-ratio "$ratio")
storage_wait=(--hicache-storage-prefetch-policy wait_complete)

serve device;                 bench device;    stop "$server_pid"
serve host "${hicache[@]}";   bench host;      stop "$server_pid"
file_tier=("${hicache[@]}" --hicache-storage-backend file
           --hicache-storage-dir "$work/pages" "${storage_wait[@]}")
serve file_cold "${file_tier[@]}"; bench file_cold; stop "$server_pid"
serve file_warm "${file_tier[@]}"; bench file_warm; stop "$server_pid"

redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    --loglevel warning >"$work/redis.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
redis_tier=("${hicache[@]}" --hicache-storage-backend redis
            --hicache-storage-redis-url "redis://127.0.0.1:$redis_port" "${storage_wait[@]}")
serve redis_a "${redis_tier[@]}"; a_pid=$server_pid; bench redis_a
serve redis_b "${redis_tier[@]}"; bench redis_b
stop "$server_pid"; stop "$a_pid"

python3 - "$work" "$convs" "$rounds" "$qlen" "$olen" "$pool" <<'PY'
import json, sys
work, convs, rounds, qlen, olen, pool = sys.argv[1], *map(int, sys.argv[2:])
names = ["device", "host", "file_cold", "file_warm", "redis_a", "redis_b"]
runs = {}
for n in names:
    d = json.load(open(f"{work}/{n}.json"))
    runs[n] = {"output_throughput": d["output_throughput"],
               "mean_ttft_ms": d["ttft_ms"]["mean"],
               "ttft_ms_by_round": d["ttft_ms_by_round"],
               "cached_token_fraction": d["cached_token_fraction"],
               "cache_tier_hit_rate": d["cache_tier_hit_rate"],
               "failed": d["failed"]}
r = runs
working_set = convs * rounds * (qlen + olen)
print(json.dumps({
    "workload": {"conversations": convs, "rounds": rounds, "question_len": qlen,
                 "output_len": olen, "working_set_tokens": working_set,
                 "device_pool_tokens": pool,
                 "pool_fraction_of_working_set": pool / working_set},
    "runs": runs,
    "host_vs_device_throughput": r["host"]["output_throughput"] / r["device"]["output_throughput"],
    "host_vs_device_ttft": r["host"]["mean_ttft_ms"] / r["device"]["mean_ttft_ms"],
    "file_warm_vs_cold_ttft": r["file_warm"]["mean_ttft_ms"] / r["file_cold"]["mean_ttft_ms"],
    "redis_b_vs_a_ttft": r["redis_b"]["mean_ttft_ms"] / r["redis_a"]["mean_ttft_ms"],
}, indent=1))
PY
