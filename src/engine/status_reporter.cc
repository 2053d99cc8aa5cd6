#include "engine/status_reporter.h"

#include <algorithm>

#include "base/logging.h"

#include <fmt/format.h>

#include <string>

namespace tessera::engine {

StatusReporter::StatusReporter(double log_interval_s)
    : log_interval_s_(log_interval_s) {}

void StatusReporter::Update(
    EngineStats& stats,
    const std::function<std::optional<uint64_t>()>& device_busy_ns,
    uint64_t waited_ns) {
  const auto now = Clock::now();
  const int64_t generated = stats.generation_tokens_total;
  const double rate_dt =
      std::chrono::duration<double>(now - last_rate_).count();
  if (rate_dt >= 1.0) {
    gen_throughput_ = (generated - generated_at_last_rate_) / rate_dt;
    generated_at_last_rate_ = generated;
    // Active wall time: the interval minus the loop's waits for work.
    const double active_ns =
        rate_dt * 1e9 - double(waited_ns - waited_at_last_rate_);
    const std::optional<uint64_t> busy_ns = device_busy_ns();
    if (busy_ns && busy_at_last_rate_ && active_ns > 1e8) {
      const double busy = double(*busy_ns - *busy_at_last_rate_);
      device_idle_fraction_ = std::clamp(1.0 - busy / active_ns, 0.0, 1.0);
    }
    busy_at_last_rate_ = busy_ns;
    waited_at_last_rate_ = waited_ns;
    last_rate_ = now;
  }
  stats.gen_throughput = gen_throughput_;
  stats.device_idle_fraction = device_idle_fraction_;

  const double log_dt = std::chrono::duration<double>(now - last_log_).count();
  if (log_interval_s_ <= 0 || log_dt < log_interval_s_) return;
  if (stats.running == 0 && stats.queued == 0 &&
      generated == generated_at_last_log_) {
    return;  // idle: nothing to say
  }
  TSR_LOG_INFO(
      "#running-req: {}, #queue-req: {}, batch: {}, token usage: {:.2f} "
      "({}/{}), cache hit rate: {:.1f}%, gen throughput (token/s): {:.1f}, "
      "device idle: {}",
      stats.running, stats.queued, stats.last_batch_size,
      stats.kv_capacity_tokens > 0
          ? double(stats.kv_used_tokens) / stats.kv_capacity_tokens
          : 0.0,
      stats.kv_used_tokens, stats.kv_capacity_tokens,
      100.0 * stats.cache_hit_rate,
      (generated - generated_at_last_log_) / log_dt,
      stats.device_idle_fraction >= 0
          ? fmt::format("{:.1f}%", 100.0 * stats.device_idle_fraction)
          : std::string("n/a"));
  last_log_ = now;
  generated_at_last_log_ = generated;
}

}  // namespace tessera::engine
