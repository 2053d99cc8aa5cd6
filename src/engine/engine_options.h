// EngineOptions (the serve flags the engine reads), EngineStats (the
// snapshot /server_info and /metrics report) and RequestTiming (one
// finished request's latencies). Plain value types.
#ifndef TESSERA_ENGINE_ENGINE_OPTIONS_H_
#define TESSERA_ENGINE_ENGINE_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/disagg.h"
#include "engine/hicache.h"
#include "model/pooling_config.h"

namespace tessera::engine {

enum class SchedulePolicy { kLongestPrefixMatch, kFirstComeFirstServed };
StatusOr<SchedulePolicy> ParseSchedulePolicy(std::string_view name);

class TpLeader;

struct EngineOptions {
  // Tensor parallelism: rank 0's leader (tp_ranks.h; not owned, outlives
  // the engine); NULL for a single rank.
  TpLeader* tp = nullptr;
  int64_t context_length = 0;           // 0: the model's
  int64_t chunked_prefill_size = 2048;  // tokens per step; <= 0: no chunking
  int64_t max_running_requests = 256;
  int64_t max_queued_requests = 0;  // 0: unlimited
  SchedulePolicy policy = SchedulePolicy::kLongestPrefixMatch;
  bool disable_radix_cache = false;
  // The host KV tier (--enable-hierarchical-cache and --hicache-*).
  HiCacheOptions hicache;
  // Overlap scheduling: batches launched and not yet postprocessed. 2 (the
  // default): step n + 1 is scheduled and launched while step n runs; 1:
  // the serial loop (--disable-overlap-schedule).
  int64_t max_inflight_launches = 2;
  double log_interval_s = 5.0;   // <= 0: no periodic status line
  std::vector<int32_t> eos_ids;  // the model's EOS ids
  // PD disaggregation (--disaggregation-mode): the role, and the KV sender
  // (prefill) or receiver (decode) of src/disagg (not owned, outlive the
  // engine). Requests without bootstrap info run aggregated either way.
  DisaggMode disagg_mode = DisaggMode::kNull;
  // Set: an embedding engine (--is-embedding; the runner was created
  // embedding_only). Every request is a prompt to embed: it ends after its
  // prefill with RequestOutput::embedding, pooled and normalized as this
  // says; nothing is sampled. Mean and cls pooling need every prompt
  // token's hidden state, so they turn prefix reuse off.
  std::optional<model::PoolingConfig> pooling;
  KvSender* kv_sender = nullptr;
  KvReceiver* kv_receiver = nullptr;
};

// Per-request timing for latency histograms, reported once per request.
struct RequestTiming {
  double queue_s = 0;         // arrival to first admission
  double ttft_s = -1;         // arrival to first token (-1: none)
  double e2e_s = 0;           // arrival to finish
  std::vector<double> itl_s;  // gaps between consecutive tokens
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  bool aborted = false;
};

// A consistent snapshot, refreshed every scheduler step.
struct EngineStats {
  bool ready = false;
  // Why the engine stopped serving (a device error: restart the server);
  // "" while healthy.
  std::string failure;
  int64_t running = 0;
  int64_t queued = 0;
  int64_t last_batch_size = 0;
  int64_t kv_capacity_tokens = 0;
  int64_t kv_used_tokens = 0;    // live sequences + locked cache
  int64_t kv_cached_tokens = 0;  // in the radix cache (locked or not)
  double cache_hit_rate = 0;     // matched / queried prompt tokens
  double gen_throughput = 0;     // tokens/s over the last interval
  // 1 - device busy / wall over the last interval (>= 1 s) in which the
  // engine had work (time spent waiting for requests does not count); -1
  // when the plugin does not report stream busy time or before the first
  // interval.
  double device_idle_fraction = -1;
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t cached_tokens_total = 0;
  int64_t requests_total = 0;
  int64_t aborted_total = 0;
  int64_t retractions_total = 0;
  // Host tier (zero without --enable-hierarchical-cache). Device-tier
  // hits are cached_tokens_total; host hits are tokens loaded back.
  bool hicache_enabled = false;
  int64_t host_capacity_tokens = 0;
  int64_t host_cached_tokens = 0;
  int64_t host_hit_tokens_total = 0;
  int64_t hicache_backup_pages_total = 0;
  int64_t hicache_load_pages_total = 0;
  uint64_t hicache_backup_bytes_total = 0;
  uint64_t hicache_load_bytes_total = 0;
  double hicache_backup_seconds_total = 0;  // summed transfer latency
  double hicache_load_seconds_total = 0;
  int64_t hicache_transfer_failures_total = 0;
  // Storage tier (zero without --hicache-storage-backend).
  bool storage_enabled = false;
  int64_t storage_hit_tokens_total = 0;  // prefetched into the host tier
  int64_t storage_objects = 0;           // pages held; -1: unknown (redis)
  int64_t storage_pages_written_total = 0;
  int64_t storage_pages_read_total = 0;
  uint64_t storage_bytes_written_total = 0;
  uint64_t storage_bytes_read_total = 0;
  double storage_read_seconds_total = 0;
  int64_t storage_failures_total = 0;
  int64_t storage_corrupt_pages_total = 0;
  int64_t storage_dropped_writes_total = 0;
  // PD disaggregation: rooms finished by this side and their KV bytes.
  int64_t disagg_transfers_total = 0;
  int64_t disagg_transfer_failures_total = 0;
  uint64_t disagg_transfer_bytes_total = 0;
  double disagg_transfer_seconds_total = 0;
  int64_t disagg_awaiting_kv = 0;  // decode: requests waiting for their KV
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_ENGINE_OPTIONS_H_
