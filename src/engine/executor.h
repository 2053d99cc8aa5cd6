// Executor: runs one scheduled batch — the model's forward pass and the
// sampler — and returns a token per sampled row. The engine's loop is
//   batch = scheduler.Schedule(); result = executor.Run(batch);
//   scheduler.Postprocess(batch, result);
// so the scheduler never touches the device and tests can drive it with a
// fake executor (scheduler_test.cc).
//
// Contract: Run reads each row's tokens [kv_len, kv_len + n) and page list
// (already covering kv_len + n positions) and writes those positions' K/V;
// it does not change kv_len or any other bookkeeping (Postprocess does).
// It may use a row's logit processor and advances a sampled row's seeded
// generator by exactly one draw. An error means the step's device state is
// unknown; the engine aborts the requests.
//
// Thread-safety: called from the scheduler thread only.
#ifndef TESSERA_ENGINE_EXECUTOR_H_
#define TESSERA_ENGINE_EXECUTOR_H_

#include "base/status.h"
#include "engine/step_batch.h"

namespace tessera::engine {

class Executor {
 public:
  virtual ~Executor() = default;
  virtual StatusOr<StepResult> Run(const ScheduledBatch& batch) = 0;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_EXECUTOR_H_
