// ModelConfig: the parts of a Hugging Face config.json Tessera runs on,
// parsed and checked for the decoder-only architectures it supports:
// LlamaForCausalLM, Qwen2ForCausalLM and Qwen3ForCausalLM.
//
// Parsing applies Hugging Face's per-architecture defaults for absent keys
// (transformers' LlamaConfig / Qwen2Config / Qwen3Config):
//   num_key_value_heads  = num_attention_heads
//   head_dim             = hidden_size / num_attention_heads
//                          (Qwen3Config's own default is 128, and that is
//                          what Hugging Face uses when the key is absent)
//   rms_norm_eps 1e-6, rope_theta 10000, hidden_act "silu",
//   tie_word_embeddings false, rope_scaling null,
//   attention_bias false (Llama, Qwen3: q/k/v/o biases)
//                  true  (Qwen2: q/k/v biases, o_proj never has one)
//   max_position_embeddings 2048 (Llama), 32768 (Qwen2, Qwen3)
// Keys that must be present: hidden_size, intermediate_size,
// num_hidden_layers, num_attention_heads, vocab_size.
//
// Rejected with a message naming the key: an unsupported architecture (the
// message lists the supported ones), hidden_act other than silu,
// rope_scaling types other than default/llama3, mlp_bias, sliding-window
// attention, a quantization_config, non-positive sizes, kv heads not
// dividing heads, an odd head_dim. Error messages start with the source
// (the config.json path). Codes: NotFound (no file), InvalidArgument
// (malformed or inconsistent), Unimplemented (valid but unsupported).
//
// Thread-safety: plain value type.
#ifndef TESSERA_MODEL_MODEL_CONFIG_H_
#define TESSERA_MODEL_MODEL_CONFIG_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::model {

enum class Architecture { kLlama, kQwen2, kQwen3 };

// "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM".
std::string_view ArchitectureClassName(Architecture arch);
// "llama", "qwen2", "qwen3" (config.json's model_type).
std::string_view ArchitectureModelType(Architecture arch);
// Accepts a class name or a model_type; nullopt otherwise.
std::optional<Architecture> ParseArchitecture(std::string_view name);
// "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM".
std::string SupportedArchitecturesList();

// rope_scaling. kDefault is plain rope (rope_scaling null or rope_type
// "default"); kLlama3 is Llama 3.1's frequency-dependent scaling.
struct RopeScaling {
  enum class Type { kDefault, kLlama3 };
  Type type = Type::kDefault;
  // llama3 only (all four are required in config.json when type is llama3).
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
  int64_t hidden_size = 0;          // H
  int64_t intermediate_size = 0;    // I (MLP width)
  int64_t num_hidden_layers = 0;    // L
  int64_t num_attention_heads = 0;  // Hq
  int64_t num_key_value_heads = 0;  // Hk (Hq % Hk == 0)
  int64_t head_dim = 0;             // D (even); Hq * D need not equal H
  int64_t vocab_size = 0;           // V (rows of embed_tokens / lm_head)
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;  // lm_head shares embed_tokens
  // q/k/v (and o for Llama/Qwen3) projections have biases; see the file
  // comment for which projections each architecture biases.
  bool attention_bias = false;
  std::string torch_dtype;  // "bfloat16", "float32", ...; empty if absent
  std::optional<int32_t> bos_token_id;
  std::vector<int32_t> eos_token_ids;  // int or list in config.json
  std::string hidden_act = "silu";

  // Qwen3 normalises q and k per head (q_norm/k_norm, shape [D]).
  bool has_qk_norm() const { return architecture == Architecture::kQwen3; }
  // Which projections carry a bias.
  bool has_qkv_bias() const { return attention_bias; }
  bool has_o_bias() const {
    return attention_bias && architecture != Architecture::kQwen2;
  }
};

// Parses config.json text. `source` (usually the path) starts every error.
StatusOr<ModelConfig> ParseModelConfig(std::string_view json_text,
                                       std::string_view source);
// Reads and parses the file at `path`.
StatusOr<ModelConfig> LoadModelConfig(const std::string& path);

// config.json text for `config` (architectures, model_type and every field
// above, rope_scaling null or its llama3 object), as Hugging Face writes it.
std::string ModelConfigToJson(const ModelConfig& config);

// Reads a whole file into a string. NotFound when absent, Internal on an
// I/O error; messages start with the path. Shared by the config loaders.
StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_MODEL_CONFIG_H_
