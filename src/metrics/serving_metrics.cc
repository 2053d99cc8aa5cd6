#include "metrics/serving_metrics.h"

#include <memory>
#include <utility>

namespace tessera::metrics {
namespace {

// SGLang's default bucket bounds (seconds), TokenizerMetricsCollector.
const std::vector<double> kTimeToFirstTokenBuckets = {
    0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400};
const std::vector<double> kInterTokenLatencyBuckets = {
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025,
    0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400,
    0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000};
const std::vector<double> kE2eRequestLatencyBuckets = {
    0.1, 0.2, 0.4, 0.6, 0.8, 1,   2,   4,   6,    8,    10,
    20,  40,  60,  80,  100, 200, 400, 600, 1200, 1800, 2400};
// SchedulerMetricsCollector's queue_time_seconds.
const std::vector<double> kQueueTimeBuckets = {
    0,   0.1, 0.2, 0.5, 1,    2,    3,    4,    5,    10,   15,   20,
    30,  40,  50,  60,  70,   80,   90,   100,  200,  300,  400,  500,
    600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000};

// Registers families labelled model_name and binds the one child for it.
class Binder {
 public:
  Binder(Registry* registry, std::string_view model_name)
      : registry_(registry), model_name_(model_name) {}

  Status AddGauge(const char* name, const char* help, Gauge** out) {
    TSR_ASSIGN_OR_RETURN(GaugeFamily * family,
                         registry_->AddGauge(Name(name), help, {"model_name"}));
    *out = &family->Labels(model_name_);
    return OkStatus();
  }

  Status AddCounter(const char* name, const char* help, Counter** out) {
    TSR_ASSIGN_OR_RETURN(
        CounterFamily * family,
        registry_->AddCounter(Name(name), help, {"model_name"}));
    *out = &family->Labels(model_name_);
    return OkStatus();
  }

  Status AddHistogram(const char* name, const char* help,
                      const std::vector<double>& buckets, Histogram** out) {
    TSR_ASSIGN_OR_RETURN(
        HistogramFamily * family,
        registry_->AddHistogram(Name(name), help, buckets, {"model_name"}));
    *out = &family->Labels(model_name_);
    return OkStatus();
  }

 private:
  static std::string Name(const char* name) {
    return std::string(kMetricPrefix) + name;
  }

  Registry* registry_;
  std::string model_name_;
};

}  // namespace

StatusOr<ServingMetrics> ServingMetrics::Create(Registry* registry,
                                                std::string_view model_name) {
  ServingMetrics m;
  Binder b(registry, model_name);
  TSR_RETURN_IF_ERROR(b.AddGauge("num_running_reqs",
                                 "The number of running requests.",
                                 &m.num_running_reqs_));
  TSR_RETURN_IF_ERROR(b.AddGauge("num_queue_reqs",
                                 "The number of requests in the waiting queue.",
                                 &m.num_queue_reqs_));
  TSR_RETURN_IF_ERROR(b.AddGauge("num_used_tokens",
                                 "The number of KV cache tokens in use.",
                                 &m.num_used_tokens_));
  TSR_RETURN_IF_ERROR(b.AddGauge(
      "token_usage", "The fraction (0..1) of the KV cache pool in use.",
      &m.token_usage_));
  TSR_RETURN_IF_ERROR(b.AddGauge("cache_hit_rate",
                                 "The prefix cache hit rate (0..1).",
                                 &m.cache_hit_rate_));
  TSR_RETURN_IF_ERROR(
      b.AddGauge("gen_throughput",
                 "The generation throughput (token/s) over the recent window.",
                 &m.gen_throughput_));
  TSR_RETURN_IF_ERROR(b.AddGauge(
      "device_idle_fraction",
      "The fraction (0..1) of the last busy second the device spent idle "
      "waiting for the host; -1 when the plugin does not report busy time.",
      &m.device_idle_fraction_));
  TSR_RETURN_IF_ERROR(
      b.AddGauge("max_total_num_tokens",
                 "Maximum total number of tokens in the KV cache pool.",
                 &m.max_total_num_tokens_));

  TSR_RETURN_IF_ERROR(b.AddCounter("prompt_tokens_total",
                                   "Number of prefill tokens processed.",
                                   &m.prompt_tokens_));
  TSR_RETURN_IF_ERROR(b.AddCounter("generation_tokens_total",
                                   "Number of generation tokens processed.",
                                   &m.generation_tokens_));
  TSR_RETURN_IF_ERROR(b.AddCounter("cached_tokens_total",
                                   "Number of cached prompt tokens.",
                                   &m.cached_tokens_));
  TSR_RETURN_IF_ERROR(b.AddCounter(
      "num_requests_total", "Number of requests processed.", &m.num_requests_));
  TSR_RETURN_IF_ERROR(b.AddCounter("num_aborted_requests_total",
                                   "Number of requests aborted.",
                                   &m.num_aborted_requests_));
  TSR_RETURN_IF_ERROR(b.AddCounter(
      "num_retracted_requests_total",
      "Total number of retracted requests (preempted to free KV cache).",
      &m.num_retracted_requests_));

  TSR_RETURN_IF_ERROR(
      b.AddHistogram("time_to_first_token_seconds",
                     "Histogram of time to first token in seconds.",
                     kTimeToFirstTokenBuckets, &m.time_to_first_token_));
  TSR_RETURN_IF_ERROR(
      b.AddHistogram("inter_token_latency_seconds",
                     "Histogram of inter-token latency in seconds.",
                     kInterTokenLatencyBuckets, &m.inter_token_latency_));
  TSR_RETURN_IF_ERROR(
      b.AddHistogram("e2e_request_latency_seconds",
                     "Histogram of end-to-end request latency in seconds.",
                     kE2eRequestLatencyBuckets, &m.e2e_request_latency_));
  TSR_RETURN_IF_ERROR(b.AddHistogram("queue_time_seconds",
                                     "Histogram of queueing time in seconds.",
                                     kQueueTimeBuckets, &m.queue_time_));
  return m;
}

Status RegisterOpFallbackMetric(
    Registry* registry, std::function<std::vector<OpFallbackCount>()> source) {
  if (!source) {
    return InvalidArgumentError(
        "RegisterOpFallbackMetric: the source function is empty; pass one "
        "that returns the per-op fallback counts");
  }
  return registry->AddCollector(
      std::string(kMetricPrefix) + "op_fallback_total",
      "Number of op runs that fell back from the plugin's kernel to the "
      "fallback path.",
      MetricType::kCounter, {"op", "plugin"},
      [source = std::move(source)](CollectorSink& sink) {
        for (const OpFallbackCount& row : source()) {
          sink.Add({row.op, row.plugin}, static_cast<double>(row.fallbacks));
        }
      });
}

Status RegisterDeviceMemoryMetrics(
    Registry* registry, std::function<std::vector<DeviceMemoryRow>()> source) {
  if (!source) {
    return InvalidArgumentError(
        "RegisterDeviceMemoryMetrics: the source function is empty");
  }
  auto shared = std::make_shared<std::function<std::vector<DeviceMemoryRow>()>>(
      std::move(source));
  const std::string p(kMetricPrefix);
  struct Family {
    const char* name;
    const char* help;
    uint64_t DeviceMemoryRow::*field;
  };
  const Family families[] = {
      {"device_memory_in_use_bytes",
       "Device memory held now: the plugin's buffers, scratch and pools.",
       &DeviceMemoryRow::in_use_bytes},
      {"device_memory_peak_bytes", "Most device memory held since start-up.",
       &DeviceMemoryRow::peak_bytes},
      {"device_memory_limit_bytes",
       "The most device memory the plugin can hold (0: unknown).",
       &DeviceMemoryRow::limit_bytes},
  };
  for (const Family& f : families) {
    TSR_RETURN_IF_ERROR(registry->AddCollector(
        p + f.name, f.help, MetricType::kGauge, {"plugin", "device", "source"},
        [shared, field = f.field](CollectorSink& sink) {
          for (const DeviceMemoryRow& row : (*shared)()) {
            sink.Add({row.plugin, std::to_string(row.device), row.source},
                     static_cast<double>(row.*field));
          }
        }));
  }
  return OkStatus();
}

Status RegisterCacheTierMetrics(Registry* registry,
                                std::function<CacheTierSnapshot()> source) {
  if (!source) {
    return InvalidArgumentError(
        "RegisterCacheTierMetrics: the source function is empty");
  }
  auto shared = std::make_shared<std::function<CacheTierSnapshot()>>(
      std::move(source));
  const std::string p(kMetricPrefix);
  using Tier = CacheTierSnapshot::Tier;
  using Transfer = CacheTierSnapshot::Transfer;
  auto tier_metric = [&](const char* name, const char* help, MetricType type,
                         double Tier::*field) {
    return registry->AddCollector(
        p + name, help, type, {"tier"}, [shared, field](CollectorSink& sink) {
          for (const Tier& t : (*shared)().tiers) sink.Add({t.name}, t.*field);
        });
  };
  auto transfer_metric = [&](const char* name, const char* help,
                             double Transfer::*field) {
    return registry->AddCollector(
        p + name, help, MetricType::kCounter, {"direction"},
        [shared, field](CollectorSink& sink) {
          for (const Transfer& t : (*shared)().transfers) {
            sink.Add({t.direction}, t.*field);
          }
        });
  };
  TSR_RETURN_IF_ERROR(tier_metric(
      "cache_tier_hit_tokens_total",
      "Prompt tokens found in a KV cache tier instead of being recomputed.",
      MetricType::kCounter, &Tier::hit_tokens));
  TSR_RETURN_IF_ERROR(tier_metric("cache_tier_tokens",
                                  "Tokens whose KV a cache tier holds.",
                                  MetricType::kGauge, &Tier::cached_tokens));
  TSR_RETURN_IF_ERROR(tier_metric("cache_tier_capacity_tokens",
                                  "Tokens a KV cache tier can hold.",
                                  MetricType::kGauge, &Tier::capacity_tokens));
  TSR_RETURN_IF_ERROR(transfer_metric(
      "cache_transfer_bytes_total",
      "Bytes of KV moved between cache tiers (backup: device to host; "
      "load: host to device).",
      &Transfer::bytes));
  TSR_RETURN_IF_ERROR(transfer_metric(
      "cache_transfer_seconds_total",
      "Summed latency (queued to done) of KV transfers between tiers.",
      &Transfer::seconds));
  TSR_RETURN_IF_ERROR(transfer_metric("cache_transfer_pages_total",
                                      "KV pages moved between cache tiers.",
                                      &Transfer::pages));
  return registry->AddCollector(
      p + "cache_transfer_failures_total",
      "KV transfers between tiers that failed (the copy was dropped and the "
      "prefix recomputed).",
      MetricType::kCounter, {}, [shared](CollectorSink& sink) {
        sink.Add({}, (*shared)().transfer_failures);
      });
}

}  // namespace tessera::metrics
