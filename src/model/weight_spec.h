// The tensors a checkpoint of each supported architecture must hold, by
// Hugging Face name and shape, as a function of its ModelConfig.
//
// Shapes follow torch's nn.Linear layout, [out_features, in_features]
// (row-major; the linear op's w [N, K]). With H hidden_size, I
// intermediate_size, V vocab_size, Hq/Hk attention/kv heads, D head_dim:
//   model.embed_tokens.weight                        [V, H]
//   per layer l, prefix model.layers.{l}.:
//     input_layernorm.weight                         [H]
//     self_attn.q_proj.weight                        [Hq*D, H]
//     self_attn.k_proj.weight, v_proj.weight         [Hk*D, H]
//     self_attn.o_proj.weight                        [H, Hq*D]
//     self_attn.{q,k,v}_proj.bias  (attention_bias)  [Hq*D], [Hk*D], [Hk*D]
//     self_attn.o_proj.bias (attention_bias, not Qwen2) [H]
//     self_attn.q_norm.weight, k_norm.weight (Qwen3) [D]
//     post_attention_layernorm.weight                [H]
//     mlp.gate_proj.weight, mlp.up_proj.weight       [I, H]
//     mlp.down_proj.weight                           [H, I]
//   model.norm.weight                                [H]
//   lm_head.weight                                   [V, H]
// lm_head.weight is optional when tie_word_embeddings is true (the output
// projection then reuses embed_tokens; a copy in the file is accepted and
// its shape checked, as Hugging Face does).
//
// Pure functions, thread-safe.
#ifndef TESSERA_MODEL_WEIGHT_SPEC_H_
#define TESSERA_MODEL_WEIGHT_SPEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_config.h"
#include "model/safetensors.h"

namespace tessera::model {

inline constexpr std::string_view kEmbedTokensName =
    "model.embed_tokens.weight";
inline constexpr std::string_view kFinalNormName = "model.norm.weight";
inline constexpr std::string_view kLmHeadName = "lm_head.weight";

// "model.layers.{layer}.{suffix}", e.g. (0, "self_attn.q_proj.weight").
std::string LayerTensorName(int64_t layer, std::string_view suffix);

struct WeightSpec {
  std::string name;
  Shape shape;
  bool optional = false;  // may be absent; checked when present
};

// Every tensor the architecture of `config` has, in module order
// (embeddings, layer 0..L-1, final norm, lm_head).
std::vector<WeightSpec> ExpectedWeights(const ModelConfig& config);

// ExpectedWeights for an embedding model (--is-embedding): lm_head.weight
// optional whatever tie_word_embeddings says (it is never read; a
// base-model export has none).
std::vector<WeightSpec> ExpectedEmbeddingWeights(const ModelConfig& config);

// Tensors some exporters write that no forward pass reads (e.g. Llama's
// per-layer "self_attn.rotary_emb.inv_freq" buffers); validation skips them.
bool IsIgnoredCheckpointTensor(std::string_view name);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_WEIGHT_SPEC_H_
