#include "engine/status_reporter.h"

#include "base/logging.h"

namespace tessera::engine {

StatusReporter::StatusReporter(double log_interval_s)
    : log_interval_s_(log_interval_s) {}

void StatusReporter::Update(EngineStats& stats) {
  const auto now = Clock::now();
  const int64_t generated = stats.generation_tokens_total;
  const double rate_dt =
      std::chrono::duration<double>(now - last_rate_).count();
  if (rate_dt >= 1.0) {
    gen_throughput_ = (generated - generated_at_last_rate_) / rate_dt;
    generated_at_last_rate_ = generated;
    last_rate_ = now;
  }
  stats.gen_throughput = gen_throughput_;

  const double log_dt = std::chrono::duration<double>(now - last_log_).count();
  if (log_interval_s_ <= 0 || log_dt < log_interval_s_) return;
  if (stats.running == 0 && stats.queued == 0 &&
      generated == generated_at_last_log_) {
    return;  // idle: nothing to say
  }
  TSR_LOG_INFO(
      "#running-req: {}, #queue-req: {}, batch: {}, token usage: {:.2f} "
      "({}/{}), cache hit rate: {:.1f}%, gen throughput (token/s): {:.1f}",
      stats.running, stats.queued, stats.last_batch_size,
      stats.kv_capacity_tokens > 0
          ? double(stats.kv_used_tokens) / stats.kv_capacity_tokens
          : 0.0,
      stats.kv_used_tokens, stats.kv_capacity_tokens,
      100.0 * stats.cache_hit_rate,
      (generated - generated_at_last_log_) / log_dt);
  last_log_ = now;
  generated_at_last_log_ = generated;
}

}  // namespace tessera::engine
