// TpShard: which part of a model one tensor-parallel rank holds (Megatron
// style, as SGLang and vLLM shard Llama/Qwen):
//   - attention: column-parallel q/k/v by heads (rank r: query heads
//     [r Hq/n, (r+1) Hq/n)); KV heads split the same way when n divides
//     Hk, replicated when Hk divides n (rank r then holds KV head
//     r / (n / Hk), the one its query heads read); o_proj row-parallel
//     (its input columns of those heads), its output all-reduced;
//   - MLP: gate/up column-parallel over I, down row-parallel, all-reduced;
//   - embedding and lm_head vocabulary-parallel (rows [r V/n, (r+1) V/n))
//     when n divides V: the lookup is embedding v2 (ABI 1.4: zeros for ids
//     outside the shard) followed by an all_reduce, the logits are
//     all-gathered; otherwise both are replicated;
//   - norms replicated; a bias of a row-parallel linear only on rank 0.
// Pure functions.
#ifndef TESSERA_MODEL_TENSOR_PARALLEL_H_
#define TESSERA_MODEL_TENSOR_PARALLEL_H_

#include <cstdint>

#include "base/status.h"
#include "model/model_config.h"

namespace tessera::model {

struct TpShard {
  int rank = 0;
  int size = 1;
  int64_t q_heads = 0;       // local query heads
  int64_t q_head_begin = 0;
  int64_t kv_heads = 0;      // local KV heads
  int64_t kv_head_begin = 0;
  int64_t inter = 0;         // local MLP width
  int64_t inter_begin = 0;
  int64_t vocab = 0;         // local lm_head rows (V when not split)
  int64_t vocab_begin = 0;
  bool vocab_split = false;

  bool enabled() const { return size > 1; }
};

// The whole model (size 1) or rank `rank` of `size`. InvalidArgument, naming
// the dimension, when `size` does not divide the model's heads or MLP width.
StatusOr<TpShard> PlanTpShard(const ModelConfig& config, int rank, int size);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_TENSOR_PARALLEL_H_
