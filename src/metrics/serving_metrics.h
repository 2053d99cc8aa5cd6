// ServingMetrics: Tessera's serving metrics, registered on a Registry under
// SGLang's names with a "tessera:" prefix instead of "sglang:", so SGLang
// dashboards and alerts work after a prefix rename. Every family carries one
// label, model_name (as SGLang's do).
//
// Names, help texts and default bucket bounds follow SGLang's
// python/sglang/srt/metrics/collector.py (SchedulerMetricsCollector,
// TokenizerMetricsCollector):
//   gauges     num_running_reqs, num_queue_reqs, num_used_tokens,
//              token_usage (fraction 0..1 of the KV pool in use),
//              cache_hit_rate (fraction 0..1 of prompt tokens served from
//              the prefix cache), gen_throughput (generated tokens/s over the
//              scheduler's recent logging window), max_total_num_tokens;
//              Tessera's own: device_idle_fraction (0..1 of the last busy
//              second the device waited for the host; -1 unknown)
//   counters   prompt_tokens_total, generation_tokens_total,
//              cached_tokens_total, num_requests_total,
//              num_aborted_requests_total, num_retracted_requests_total
//              (SGLang's counter of retracted requests; SGLang's gauge
//              num_retracted_reqs is not exported)
//   histograms (seconds) time_to_first_token_seconds,
//              inter_token_latency_seconds, e2e_request_latency_seconds,
//              queue_time_seconds
// Tessera's own, not in SGLang:
//   tessera:op_fallback_total{op,plugin}: how often an op ran on the
//   fallback path instead of the plugin's kernel (RegisterOpFallbackMetric).
//   tessera:device_memory_{in_use,peak,limit}_bytes{plugin,device,source}:
//   each device's memory (RegisterDeviceMemoryMetrics).
//
// Thread-safety: the handles are Registry cells (metrics/metric.h):
// lock-free and safe from any thread. ServingMetrics is a copyable bundle of
// pointers into the Registry, which must outlive it.
#ifndef TESSERA_METRICS_SERVING_METRICS_H_
#define TESSERA_METRICS_SERVING_METRICS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "metrics/registry.h"

namespace tessera::metrics {

inline constexpr std::string_view kMetricPrefix = "tessera:";

class ServingMetrics {
 public:
  // Registers every family above on *registry, labelled model_name.
  // Errors: ALREADY_EXISTS if the registry already holds one of the names
  // (e.g. Create called twice on one registry).
  static StatusOr<ServingMetrics> Create(Registry* registry,
                                         std::string_view model_name);

  // Gauges, set by the scheduler after each step.
  Gauge& num_running_reqs() const { return *num_running_reqs_; }
  Gauge& num_queue_reqs() const { return *num_queue_reqs_; }
  Gauge& num_used_tokens() const { return *num_used_tokens_; }
  Gauge& token_usage() const { return *token_usage_; }
  Gauge& cache_hit_rate() const { return *cache_hit_rate_; }
  Gauge& gen_throughput() const { return *gen_throughput_; }
  Gauge& device_idle_fraction() const { return *device_idle_fraction_; }
  Gauge& max_total_num_tokens() const { return *max_total_num_tokens_; }

  // Counters (tokens or requests).
  Counter& prompt_tokens() const { return *prompt_tokens_; }
  Counter& generation_tokens() const { return *generation_tokens_; }
  Counter& cached_tokens() const { return *cached_tokens_; }
  Counter& num_requests() const { return *num_requests_; }
  Counter& num_aborted_requests() const { return *num_aborted_requests_; }
  Counter& num_retracted_requests() const { return *num_retracted_requests_; }

  // Latency histograms, in seconds.
  Histogram& time_to_first_token() const { return *time_to_first_token_; }
  Histogram& inter_token_latency() const { return *inter_token_latency_; }
  Histogram& e2e_request_latency() const { return *e2e_request_latency_; }
  Histogram& queue_time() const { return *queue_time_; }

 private:
  ServingMetrics() = default;

  Gauge* num_running_reqs_ = nullptr;
  Gauge* num_queue_reqs_ = nullptr;
  Gauge* num_used_tokens_ = nullptr;
  Gauge* token_usage_ = nullptr;
  Gauge* cache_hit_rate_ = nullptr;
  Gauge* gen_throughput_ = nullptr;
  Gauge* device_idle_fraction_ = nullptr;
  Gauge* max_total_num_tokens_ = nullptr;
  Counter* prompt_tokens_ = nullptr;
  Counter* generation_tokens_ = nullptr;
  Counter* cached_tokens_ = nullptr;
  Counter* num_requests_ = nullptr;
  Counter* num_aborted_requests_ = nullptr;
  Counter* num_retracted_requests_ = nullptr;
  Histogram* time_to_first_token_ = nullptr;
  Histogram* inter_token_latency_ = nullptr;
  Histogram* e2e_request_latency_ = nullptr;
  Histogram* queue_time_ = nullptr;
};

// One row of tessera:op_fallback_total: `fallbacks` runs of `op` that fell
// back from `plugin`'s kernel to the fallback path, since start-up.
struct OpFallbackCount {
  std::string op;
  std::string plugin;
  uint64_t fallbacks = 0;
};

// Registers the collector counter tessera:op_fallback_total{op,plugin},
// whose values `source` returns at each scrape (rows with equal op and
// plugin are summed). `source` may run on several threads at once.
// Errors: ALREADY_EXISTS if registered twice; INVALID_ARGUMENT if `source`
// is empty.
Status RegisterOpFallbackMetric(
    Registry* registry, std::function<std::vector<OpFallbackCount>()> source);

// One device's memory at a scrape: from the plugin's memory_stats entry
// (source "plugin", ABI 1.7) or, for a plugin without it, the host's own
// count of the buffers it allocated there (source "host"). limit 0: unknown.
struct DeviceMemoryRow {
  std::string plugin;
  int device = 0;
  std::string source;
  uint64_t in_use_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t limit_bytes = 0;
};

// Registers the gauges tessera:device_memory_in_use_bytes,
// tessera:device_memory_peak_bytes and tessera:device_memory_limit_bytes
// {plugin,device,source}, read from `source` at each scrape (may run on
// several threads at once). Errors as RegisterOpFallbackMetric.
Status RegisterDeviceMemoryMetrics(
    Registry* registry, std::function<std::vector<DeviceMemoryRow>()> source);

// The KV cache tiers at one scrape (HiCache): per tier ("device", "host")
// the tokens a request found there instead of recomputing them, the tokens
// held and the capacity; per direction ("backup" device->host, "load"
// host->device) the bytes moved and the summed transfer latency.
struct CacheTierSnapshot {
  struct Tier {
    std::string name;
    double hit_tokens = 0;
    double cached_tokens = 0;
    double capacity_tokens = 0;
  };
  struct Transfer {
    std::string direction;
    double bytes = 0;
    double seconds = 0;
    double pages = 0;
  };
  std::vector<Tier> tiers;
  std::vector<Transfer> transfers;
  double transfer_failures = 0;
};

// Registers the collectors tessera:cache_tier_hit_tokens_total{tier},
// tessera:cache_tier_tokens{tier}, tessera:cache_tier_capacity_tokens{tier},
// tessera:cache_transfer_bytes_total{direction},
// tessera:cache_transfer_seconds_total{direction},
// tessera:cache_transfer_pages_total{direction} and
// tessera:cache_transfer_failures_total, read from `source` at each scrape
// (which may run on several threads at once).
Status RegisterCacheTierMetrics(Registry* registry,
                                std::function<CacheTierSnapshot()> source);

}  // namespace tessera::metrics

#endif  // TESSERA_METRICS_SERVING_METRICS_H_
