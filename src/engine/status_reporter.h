// StatusReporter: the engine's running numbers outside its loop — the
// generation throughput and the device idle fraction over the last second
// for EngineStats, and the SGLang-style status line
//   #running-req: 3, #queue-req: 0, batch: 3, token usage: 0.02 (96/4096),
//   cache hit rate: 41.0%, gen throughput (token/s): 812.3
// every log_interval_s while the engine is busy (<= 0: never).
//
// Thread-safety: not thread-safe; the scheduler thread calls it.
#ifndef TESSERA_ENGINE_STATUS_REPORTER_H_
#define TESSERA_ENGINE_STATUS_REPORTER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>

#include "engine/engine_options.h"

namespace tessera::engine {

class StatusReporter {
 public:
  explicit StatusReporter(double log_interval_s);

  // `stats` is the fresh snapshot (everything but gen_throughput and
  // device_idle_fraction filled); `device_busy_ns` reads the executor's
  // cumulative device busy time (nullopt: unknown; called once per rate
  // interval, not per step) and `waited_ns` is the
  // loop's cumulative time waiting for work. Sets the two rates and logs
  // the status line when it is due.
  void Update(EngineStats& stats,
              const std::function<std::optional<uint64_t>()>& device_busy_ns,
              uint64_t waited_ns);

 private:
  using Clock = std::chrono::steady_clock;
  const double log_interval_s_;
  Clock::time_point last_rate_ = Clock::now();
  int64_t generated_at_last_rate_ = 0;
  double gen_throughput_ = 0;
  std::optional<uint64_t> busy_at_last_rate_;
  uint64_t waited_at_last_rate_ = 0;
  double device_idle_fraction_ = -1;
  Clock::time_point last_log_ = Clock::now();
  int64_t generated_at_last_log_ = 0;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_STATUS_REPORTER_H_
