// ReferenceModel: a plain float64 forward pass of the Llama / Qwen2 / Qwen3
// decoder, the oracle the model runner's tests compare against.
//
// Deliberately independent of the engine: it reads the tensors through the
// checkpoint reader only, converts them to double, and implements every
// step itself in the most direct way (no ops, no dispatcher, no paging):
// RMSNorm, separate q/k/v projections with whatever biases the checkpoint
// holds, per-head q/k RMSNorm when q_norm/k_norm tensors exist, rotate-half
// rope with its own inv_freq (default and llama3 scaling), causal GQA
// attention over a per-sequence contiguous K/V history, SwiGLU, lm_head (the
// embedding table when tied). Slow by design; for tiny models only.
//
// Thread-safety: a loaded ReferenceModel is immutable; each Cache belongs to
// one caller.
#ifndef TESSERA_TESTS_MODEL_REFERENCE_FORWARD_H_
#define TESSERA_TESTS_MODEL_REFERENCE_FORWARD_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/checkpoint.h"

namespace tessera::testing {

class ReferenceModel {
 public:
  static StatusOr<std::unique_ptr<ReferenceModel>> Load(
      const model::Checkpoint& checkpoint);

  // One sequence's K/V history: per layer, rows [position][Hk * D].
  struct Cache {
    std::vector<std::vector<std::vector<double>>> k, v;
    int64_t length = 0;
  };
  Cache NewCache() const;

  // Runs `tokens` after what `cache` holds, appends their K/V to it and
  // returns the logits of every new token: [tokens.size()][V].
  std::vector<std::vector<double>> Forward(
      Cache& cache, std::span<const int32_t> tokens) const;
  // As Forward, but returns each new token's final hidden state (after the
  // final norm, before lm_head): [tokens.size()][H]. Embedding models pool
  // these.
  std::vector<std::vector<double>> ForwardHidden(
      Cache& cache, std::span<const int32_t> tokens) const;

  const model::ModelConfig& config() const { return config_; }
  const std::vector<double>& inv_freq() const { return inv_freq_; }

 private:
  ReferenceModel() = default;
  const std::vector<double>* Find(const std::string& name) const;
  const std::vector<double>& Get(const std::string& name) const;

  model::ModelConfig config_;
  std::map<std::string, std::vector<double>> tensors_;
  std::vector<double> inv_freq_;  // [D / 2]
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_MODEL_REFERENCE_FORWARD_H_
