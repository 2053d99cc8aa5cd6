// Executor: runs scheduled batches — the model's forward pass and the
// sampler — and returns a token per sampled row. The engine's loop is
//   batch = scheduler.Schedule(); executor.Launch(batch);
//   scheduler.Postprocess(batch, executor.Collect());
// so the scheduler never touches the device and tests can drive it with a
// fake executor (scheduler_test.cc). With overlap scheduling the engine
// launches batch n + 1 before it collects batch n, so the device computes
// while the host postprocesses and schedules.
//
// Contract: Launch enqueues the work of each row — its new tokens
// [kv_start, kv_start + n) at the positions kv_start.., through its page
// list (already covering kv_start + n positions) — and returns without
// waiting for the device where it can. A row with input_from >= 0 feeds
// the id that row `input_from` of the previous Launch sampled (still on the
// device) instead of a host token. Launch may use a row's logit processor
// and advances a sampled row's seeded generator by exactly one draw. It
// never changes bookkeeping (Schedule and Postprocess do).
// Collect returns the results in launch order, one per Launch; an error
// means the step's device state is unknown (the engine aborts the
// requests). At most two launches are outstanding.
//
// Thread-safety: called from the scheduler thread only.
#ifndef TESSERA_ENGINE_EXECUTOR_H_
#define TESSERA_ENGINE_EXECUTOR_H_

#include <cstdint>
#include <optional>

#include "base/status.h"
#include "engine/step_batch.h"

namespace tessera::engine {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual void Launch(const ScheduledBatch& batch) = 0;
  virtual StatusOr<StepResult> Collect() = 0;

  // Cumulative nanoseconds the device spent running this executor's work
  // (the plugin's stream busy time); nullopt when unknown.
  virtual std::optional<uint64_t> DeviceBusyNs() { return std::nullopt; }

  // After a failed step: OK when the device can run the next one (the
  // failure was the step's own, e.g. a launch refused synchronously); the
  // error when it cannot (a stream holds a sticky error), which stops the
  // engine (EngineStats::failure).
  virtual Status Health() { return OkStatus(); }

  // Launch and Collect in one (the serial step).
  StatusOr<StepResult> Run(const ScheduledBatch& batch) {
    Launch(batch);
    return Collect();
  }
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_EXECUTOR_H_
