// ModelExecutor: the Executor over a real model — one ModelRunner forward
// pass for the whole batch, host logit processors and logprobs for the rows
// that need them, then the device sampler.
//
// Per step: when no sampled row needs host logits the logits stay on the
// device (ForwardOnDevice -> Sampler); otherwise they come to the host once
// (Forward), each such row's LogitProcessor adjusts its row in place, the
// rows go back up (UploadLogits) and logprobs are computed from the
// adjusted rows (what the sampler saw).
//
// Thread-safety: not thread-safe; the scheduler thread drives it (and the
// runner's stream). The runner must outlive it.
#ifndef TESSERA_ENGINE_MODEL_EXECUTOR_H_
#define TESSERA_ENGINE_MODEL_EXECUTOR_H_

#include <cstdint>
#include <span>

#include "engine/executor.h"
#include "model/model_runner.h"
#include "model/sampler.h"

namespace tessera::engine {

class ModelExecutor : public Executor {
 public:
  explicit ModelExecutor(model::ModelRunner& runner);

  StatusOr<StepResult> Run(const ScheduledBatch& batch) override;

 private:
  model::ModelRunner& runner_;
  model::Sampler sampler_;
};

// log_softmax(row)[id] and the k largest entries (ties to the lower id).
TokenLogprobs ComputeLogprobs(std::span<const float> row, int32_t id,
                              int32_t k);

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_MODEL_EXECUTOR_H_
