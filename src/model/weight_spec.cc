#include "model/weight_spec.h"

#include <fmt/format.h>

namespace tessera::model {

std::string LayerTensorName(int64_t layer, std::string_view suffix) {
  return fmt::format("model.layers.{}.{}", layer, suffix);
}

std::vector<WeightSpec> ExpectedWeights(const ModelConfig& c) {
  const int64_t h = c.hidden_size;
  const int64_t q_dim = c.num_attention_heads * c.head_dim;
  const int64_t kv_dim = c.num_key_value_heads * c.head_dim;
  const int64_t inter = c.intermediate_size;
  std::vector<WeightSpec> specs;
  specs.push_back({std::string(kEmbedTokensName), {c.vocab_size, h}});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    auto add = [&](std::string_view suffix, Shape shape) {
      specs.push_back({LayerTensorName(l, suffix), std::move(shape)});
    };
    add("input_layernorm.weight", {h});
    add("self_attn.q_proj.weight", {q_dim, h});
    add("self_attn.k_proj.weight", {kv_dim, h});
    add("self_attn.v_proj.weight", {kv_dim, h});
    add("self_attn.o_proj.weight", {h, q_dim});
    if (c.has_qkv_bias()) {
      add("self_attn.q_proj.bias", {q_dim});
      add("self_attn.k_proj.bias", {kv_dim});
      add("self_attn.v_proj.bias", {kv_dim});
    }
    if (c.has_o_bias()) add("self_attn.o_proj.bias", {h});
    if (c.has_qk_norm()) {
      add("self_attn.q_norm.weight", {c.head_dim});
      add("self_attn.k_norm.weight", {c.head_dim});
    }
    add("post_attention_layernorm.weight", {h});
    add("mlp.gate_proj.weight", {inter, h});
    add("mlp.up_proj.weight", {inter, h});
    add("mlp.down_proj.weight", {h, inter});
  }
  specs.push_back({std::string(kFinalNormName), {h}});
  specs.push_back({std::string(kLmHeadName),
                   {c.vocab_size, h},
                   /*optional=*/c.tie_word_embeddings});
  return specs;
}

std::vector<WeightSpec> ExpectedEmbeddingWeights(const ModelConfig& config) {
  std::vector<WeightSpec> specs = ExpectedWeights(config);
  for (WeightSpec& spec : specs) {
    if (spec.name == kLmHeadName) spec.optional = true;
  }
  return specs;
}

bool IsIgnoredCheckpointTensor(std::string_view name) {
  constexpr std::string_view kSuffix = ".self_attn.rotary_emb.inv_freq";
  return name.size() >= kSuffix.size() &&
         name.substr(name.size() - kSuffix.size()) == kSuffix;
}

}  // namespace tessera::model
