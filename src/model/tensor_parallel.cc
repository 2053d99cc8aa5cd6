#include "model/tensor_parallel.h"

#include <fmt/format.h>

namespace tessera::model {

StatusOr<TpShard> PlanTpShard(const ModelConfig& config, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) {
    return InvalidArgumentError(
        fmt::format("tensor-parallel rank {} of {} is not valid", rank, size));
  }
  const int64_t n = size;
  const int64_t hq = config.num_attention_heads;
  const int64_t hk = config.num_key_value_heads;
  const int64_t inter = config.intermediate_size;
  const int64_t vocab = config.vocab_size;
  if (hq % n != 0) {
    return InvalidArgumentError(fmt::format(
        "--tp-size {} does not divide the model's {} attention heads; choose "
        "a tp size that does",
        size, hq));
  }
  if (hk % n != 0 && n % hk != 0) {
    return InvalidArgumentError(fmt::format(
        "--tp-size {} and the model's {} KV heads: one must divide the other "
        "(KV heads are split across ranks, or replicated when fewer)",
        size, hk));
  }
  if (inter % n != 0) {
    return InvalidArgumentError(fmt::format(
        "--tp-size {} does not divide the model's MLP width "
        "(intermediate_size {})",
        size, inter));
  }
  TpShard s;
  s.rank = rank;
  s.size = size;
  s.q_heads = hq / n;
  s.q_head_begin = rank * s.q_heads;
  if (hk % n == 0) {
    s.kv_heads = hk / n;
    s.kv_head_begin = rank * s.kv_heads;
  } else {
    s.kv_heads = 1;
    s.kv_head_begin = rank / (n / hk);
  }
  s.inter = inter / n;
  s.inter_begin = rank * s.inter;
  s.vocab_split = size > 1 && vocab % n == 0;
  s.vocab = s.vocab_split ? vocab / n : vocab;
  s.vocab_begin = s.vocab_split ? rank * s.vocab : 0;
  return s;
}

}  // namespace tessera::model
