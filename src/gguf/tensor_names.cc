#include "gguf/tensor_names.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace tessera::gguf {
namespace {

// (Hugging Face module under model.layers.N, GGUF module under blk.N).
constexpr std::pair<std::string_view, std::string_view> kLayerModules[] = {
    {"input_layernorm", "attn_norm"},
    {"self_attn.q_proj", "attn_q"},
    {"self_attn.k_proj", "attn_k"},
    {"self_attn.v_proj", "attn_v"},
    {"self_attn.o_proj", "attn_output"},
    {"self_attn.q_norm", "attn_q_norm"},
    {"self_attn.k_norm", "attn_k_norm"},
    {"post_attention_layernorm", "ffn_norm"},
    {"mlp.gate_proj", "ffn_gate"},
    {"mlp.up_proj", "ffn_up"},
    {"mlp.down_proj", "ffn_down"},
};

constexpr std::pair<std::string_view, std::string_view> kTopLevel[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

// "<prefix><digits>.<module>.<param>" split into (layer, module, param)
// with param "weight" or "bias"; nullopt otherwise.
struct LayerName {
  std::string_view layer, module, param;
};
std::optional<LayerName> SplitLayerName(std::string_view name,
                                        std::string_view prefix) {
  if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
  std::string_view rest = name.substr(prefix.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  LayerName out;
  out.layer = rest.substr(0, dot);
  if (!std::all_of(out.layer.begin(), out.layer.end(),
                   [](char ch) { return ch >= '0' && ch <= '9'; })) {
    return std::nullopt;
  }
  rest = rest.substr(dot + 1);
  const size_t last = rest.rfind('.');
  if (last == std::string_view::npos) return std::nullopt;
  out.module = rest.substr(0, last);
  out.param = rest.substr(last + 1);
  if (out.param != "weight" && out.param != "bias") return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::string> GgufTensorName(std::string_view hf) {
  for (const auto& [from, to] : kTopLevel) {
    if (hf == from) return std::string(to);
  }
  auto parts = SplitLayerName(hf, "model.layers.");
  if (!parts) return std::nullopt;
  for (const auto& [from, to] : kLayerModules) {
    if (parts->module == from) {
      return fmt::format("blk.{}.{}.{}", parts->layer, to, parts->param);
    }
  }
  return std::nullopt;
}

std::optional<std::string> HfTensorName(std::string_view name) {
  for (const auto& [hf, gguf] : kTopLevel) {
    if (name == gguf) return std::string(hf);
  }
  auto parts = SplitLayerName(name, "blk.");
  if (!parts) return std::nullopt;
  for (const auto& [hf, gguf] : kLayerModules) {
    if (parts->module == gguf) {
      return fmt::format("model.layers.{}.{}.{}", parts->layer, hf,
                         parts->param);
    }
  }
  return std::nullopt;
}

}  // namespace tessera::gguf
