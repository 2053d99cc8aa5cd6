// ModelExecutor: the Executor over a real model — one ModelRunner forward
// pass for the whole batch, host logit processors and logprobs for the rows
// that need them, then the device sampler.
//
// Per step: when no sampled row needs host logits the logits stay on the
// device (ForwardOnDevice -> Sampler::Enqueue) and Launch returns once the
// work is queued. Otherwise the logits come to the host once (Forward,
// which waits), each such row's LogitProcessor adjusts its row in place
// and the rows go back up (UploadLogits) for the sampler. Either way the
// sampled ids are copied to a host buffer behind an event that Collect
// waits for, and stay on the device as the next step's input tokens
// (Batch::device_tokens); Collect computes logprobs from the adjusted rows
// (what the sampler saw).
//
// Prompt logprobs (EngineRequest::prompt_logprobs): the scored prefill
// rows bring a logits row per token (SequenceInput::all_rows); their
// logprobs are computed on the host, then each sequence's last row alone
// goes on to the logit processors and the sampler.
//
// Embedding engines (a PoolingConfig): the step runs the model up to the
// final norm (ModelRunner::ForwardHidden, synchronous) and each row gets
// the hidden rows its sequence's pooler needs; nothing is sampled.
//
// With tensor parallelism (a TpLeader), every step is first sent to the
// worker ranks and the sampled ids are broadcast to them after the sampler
// (tp_ranks.h).
//
// Thread-safety: not thread-safe; the scheduler thread drives it (and the
// runner's stream). The runner (and the leader) must outlive it.
#ifndef TESSERA_ENGINE_MODEL_EXECUTOR_H_
#define TESSERA_ENGINE_MODEL_EXECUTOR_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "engine/executor.h"
#include "model/model_runner.h"
#include "model/pooling_config.h"
#include "model/sampler.h"
#include "engine/tp_ranks.h"

namespace tessera::engine {

class ModelExecutor : public Executor {
 public:
  explicit ModelExecutor(model::ModelRunner& runner, TpLeader* tp = nullptr,
                         std::optional<model::PoolingConfig> pooling = {});

  void Launch(const ScheduledBatch& batch) override;
  StatusOr<StepResult> Collect() override;
  std::optional<uint64_t> DeviceBusyNs() override;
  // The compute and copy streams' sticky errors.
  Status Health() override;

 private:
  using LayerEvents = std::vector<runtime::EventPtr>;
  struct InFlight {
    Status status;      // the launch's error, if any
    int staging = -1;   // the host_ids_ slot its sampled ids are copied to
    int64_t rows = 0;
    // Host-logits steps: the adjusted logits [rows, V] and, per row, the
    // top-K of the logprobs asked for (-1: none); Collect computes them.
    model::Logits host_logits;
    std::vector<int32_t> top_logprobs;
    // Prompt logprobs of the step's scored prefill rows (StepResult's).
    std::vector<std::vector<TokenLogprobs>> prompt_logprobs;
    // Embedding steps: the result, complete at launch.
    std::optional<StepResult> embedded;
    // PD prefill steps: the event after each layer (BatchRow::kv_progress
    // waits on them); kept until Collect, when the step's work is done.
    std::shared_ptr<LayerEvents> layer_events;
  };
  // Enqueues the step and the copy of its sampled ids; fills `f`.
  Status LaunchStep(const ScheduledBatch& batch, InFlight& f);
  // Prompt logprobs of the scored rows from `logits` (the rows
  // input.sequences asked for), and the logits of each row's last token
  // [rows, V] for the sampler.
  StatusOr<model::Logits> ScorePrompts(
      const ScheduledBatch& batch, const model::Batch& input,
      model::Logits logits,
      std::vector<std::vector<TokenLogprobs>>* prompt_logprobs);
  // An embedding step: the forward pass and the rows each pooler needs.
  StatusOr<StepResult> EmbedStep(const ScheduledBatch& batch);

  model::ModelRunner& runner_;
  TpLeader* const tp_;  // NULL without tensor parallelism
  const std::optional<model::PoolingConfig> pooling_;
  std::deque<InFlight> inflight_;
  // Host copies of the sampled ids, one per outstanding launch, each ready
  // once ids_copied_[i] (on the copy stream) completes. Declared before the
  // sampler, which synchronises the streams when it goes.
  std::vector<int32_t> host_ids_[2];
  runtime::EventPtr ids_copied_[2];
  // Recorded on the compute stream before each copy: its status is the
  // step's (Sampler::WaitReadBack).
  runtime::EventPtr ids_computed_[2];
  int next_staging_ = 0;
  model::Sampler sampler_;
  // The previous launch's sampled ids, on the device.
  model::DeviceIds last_ids_;
};

// log_softmax(row)[id] and the k largest entries (ties to the lower id).
TokenLogprobs ComputeLogprobs(std::span<const float> row, int32_t id,
                              int32_t k);

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_MODEL_EXECUTOR_H_
