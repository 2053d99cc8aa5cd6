// Checkpoint::OpenGguf: a llama.cpp GGUF file as a checkpoint. The model
// config is rebuilt from the <arch>.* metadata as the config.json
// gguf/convert.h writes it from, then parsed by ParseModelConfig, so one
// set of checks covers both sources. Tensors are renamed and reshaped to
// Hugging Face's layout (gguf/tensor_names.h; dims reversed), and the
// llama q/k rows keep their interleaved rotary order in the file, undone
// as they are read (TensorRef::ReadRows).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/logging.h"
#include "gguf/block_decode.h"
#include "gguf/gguf_reader.h"
#include "gguf/tensor_names.h"
#include "model/checkpoint.h"
#include "model/rope.h"

namespace tessera::model {
namespace {

struct Metadata {
  const gguf::GgufFile& file;
  std::string arch;

  std::string Key(std::string_view suffix) const {
    return arch + "." + std::string(suffix);
  }
  StatusOr<int64_t> RequiredInt(std::string_view suffix) const {
    const std::string key = Key(suffix);
    TSR_ASSIGN_OR_RETURN(auto v, file.GetInt(key));
    if (!v) {
      return InvalidArgumentError(fmt::format(
          "{}: no {} in the metadata; the file is incomplete", file.path(),
          key));
    }
    return *v;
  }
  StatusOr<std::optional<int64_t>> Int(std::string_view suffix) const {
    return file.GetInt(Key(suffix));
  }
  StatusOr<std::optional<double>> Float(std::string_view suffix) const {
    return file.GetFloat(Key(suffix));
  }
};

StatusOr<Architecture> GgufArchitecture(const gguf::GgufFile& file,
                                        std::string* name) {
  TSR_ASSIGN_OR_RETURN(auto arch, file.GetString("general.architecture"));
  if (!arch) {
    return InvalidArgumentError(fmt::format(
        "{}: no general.architecture; is this a llama.cpp model file?",
        file.path()));
  }
  *name = *arch;
  if (*arch == "llama") return Architecture::kLlama;
  if (*arch == "qwen2") return Architecture::kQwen2;
  if (*arch == "qwen3") return Architecture::kQwen3;
  return UnimplementedError(fmt::format(
      "{}: GGUF architecture '{}'; Tessera runs llama, qwen2 and qwen3",
      file.path(), *arch));
}

// Llama 3's rope scaling from the per-frequency divisors llama.cpp keeps in
// rope_freqs.weight: the llama3 parameters that reproduce them (factor =
// the largest divisor, Llama 3.1's low/high frequency factors 1 and 4, the
// original context from the metadata or 8192), or Unimplemented.
StatusOr<RopeScaling> RopeScalingFromFreqs(const gguf::GgufTensor& freqs,
                                           const Metadata& m, int64_t head_dim,
                                           double theta) {
  const std::string& path = m.file.path();
  if (freqs.num_elements() != head_dim / 2) {
    return InvalidArgumentError(fmt::format(
        "{}: rope_freqs.weight has {} elements; head_dim {} needs {}", path,
        freqs.num_elements(), head_dim, head_dim / 2));
  }
  std::vector<float> divisors(size_t(head_dim / 2));
  // 1-D: one row of whole blocks.
  gguf::DecodeRow(freqs.type, freqs.data, freqs.num_elements(), divisors.data());
  RopeScaling s;
  s.type = RopeScaling::Type::kLlama3;
  s.factor = *std::max_element(divisors.begin(), divisors.end());
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  TSR_ASSIGN_OR_RETURN(auto original, m.Int("rope.scaling.original_context_length"));
  s.original_max_position_embeddings = original.value_or(8192);
  const auto plain = ComputeRopeInvFreq(head_dim, theta, {});
  const auto scaled = ComputeRopeInvFreq(head_dim, theta, s);
  for (size_t i = 0; i < divisors.size(); ++i) {
    const double want = plain[i] / scaled[i];
    if (std::abs(want - divisors[i]) > 1e-3 * std::max(1.0, want)) {
      return UnimplementedError(fmt::format(
          "{}: rope_freqs.weight holds frequency divisors that are not Llama "
          "3's rope scaling (factor {}, low/high frequency factors 1 and 4, "
          "original context {}): divisor {} is {}, expected {}",
          path, s.factor, s.original_max_position_embeddings, i, divisors[i],
          want));
    }
  }
  return s;
}

StatusOr<ModelConfig> GgufModelConfig(const gguf::GgufFile& file) {
  std::string arch_name;
  TSR_ASSIGN_OR_RETURN(Architecture arch, GgufArchitecture(file, &arch_name));
  Metadata m{file, arch_name};
  ModelConfig c;
  c.architecture = arch;
  TSR_ASSIGN_OR_RETURN(c.hidden_size, m.RequiredInt("embedding_length"));
  TSR_ASSIGN_OR_RETURN(c.intermediate_size, m.RequiredInt("feed_forward_length"));
  TSR_ASSIGN_OR_RETURN(c.num_hidden_layers, m.RequiredInt("block_count"));
  TSR_ASSIGN_OR_RETURN(c.num_attention_heads,
                       m.RequiredInt("attention.head_count"));
  TSR_ASSIGN_OR_RETURN(auto kv_heads, m.Int("attention.head_count_kv"));
  c.num_key_value_heads = kv_heads.value_or(c.num_attention_heads);
  TSR_ASSIGN_OR_RETURN(auto key_length, m.Int("attention.key_length"));
  c.head_dim = key_length.value_or(
      c.num_attention_heads > 0 ? c.hidden_size / c.num_attention_heads : 0);
  TSR_ASSIGN_OR_RETURN(auto value_length, m.Int("attention.value_length"));
  TSR_ASSIGN_OR_RETURN(auto rope_dims, m.Int("rope.dimension_count"));
  if ((value_length && *value_length != c.head_dim) ||
      (rope_dims && *rope_dims != c.head_dim)) {
    return UnimplementedError(fmt::format(
        "{}: key length {}, value length {}, rotary dimensions {}; Tessera "
        "runs models whose three are equal",
        file.path(), c.head_dim, value_length.value_or(c.head_dim),
        rope_dims.value_or(c.head_dim)));
  }
  TSR_ASSIGN_OR_RETURN(auto context, m.Int("context_length"));
  c.max_position_embeddings =
      context.value_or(arch == Architecture::kLlama ? 2048 : 32768);
  TSR_ASSIGN_OR_RETURN(auto eps, m.Float("attention.layer_norm_rms_epsilon"));
  c.rms_norm_eps = eps.value_or(1e-6);
  TSR_ASSIGN_OR_RETURN(auto theta, m.Float("rope.freq_base"));
  c.rope_theta = theta.value_or(10000.0);
  TSR_ASSIGN_OR_RETURN(auto scaling,
                       file.GetString(m.Key("rope.scaling.type")));
  if (scaling && *scaling != "none") {
    return UnimplementedError(fmt::format(
        "{}: rope scaling '{}'; Tessera runs plain rope and Llama 3's "
        "(rope_freqs.weight)",
        file.path(), *scaling));
  }
  if (const gguf::GgufTensor* freqs = file.FindTensor("rope_freqs.weight")) {
    TSR_ASSIGN_OR_RETURN(c.rope_scaling, RopeScalingFromFreqs(
                                             *freqs, m, c.head_dim, c.rope_theta));
  }

  const gguf::GgufTensor* embed = file.FindTensor("token_embd.weight");
  if (embed == nullptr || embed->dims.size() != 2) {
    return InvalidArgumentError(fmt::format(
        "{}: no 2-D token_embd.weight; the file is incomplete", file.path()));
  }
  TSR_ASSIGN_OR_RETURN(auto vocab, m.Int("vocab_size"));
  c.vocab_size = vocab.value_or(embed->dims[1]);
  c.tie_word_embeddings = file.FindTensor("output.weight") == nullptr;
  c.attention_bias = file.FindTensor("blk.0.attn_q.bias") != nullptr;
  switch (embed->type) {
    case gguf::TensorType::kF32:
      c.torch_dtype = "float32";
      break;
    case gguf::TensorType::kF16:
      c.torch_dtype = "float16";
      break;
    default:
      c.torch_dtype = "bfloat16";
  }
  TSR_ASSIGN_OR_RETURN(auto bos, file.GetInt("tokenizer.ggml.bos_token_id"));
  if (bos) c.bos_token_id = int32_t(*bos);
  for (std::string_view key :
       {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
        "tokenizer.ggml.eom_token_id"}) {
    TSR_ASSIGN_OR_RETURN(auto id, file.GetInt(key));
    if (id && std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(),
                        int32_t(*id)) == c.eos_token_ids.end()) {
      c.eos_token_ids.push_back(int32_t(*id));
    }
  }
  // One set of checks for both sources: through config.json's parser.
  return ParseModelConfig(ModelConfigToJson(c),
                          fmt::format("{} (GGUF metadata)", file.path()));
}

}  // namespace

StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::OpenGguf(
    const std::string& path) {
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->dir_ = path;
  TSR_ASSIGN_OR_RETURN(ckpt->gguf_, gguf::GgufFile::Open(path));
  TSR_ASSIGN_OR_RETURN(ckpt->config_, GgufModelConfig(*ckpt->gguf_));
  ckpt->generation_.eos_token_ids = ckpt->config_.eos_token_ids;
  ckpt->generation_.bos_token_id = ckpt->config_.bos_token_id;
  TSR_RETURN_IF_ERROR(ckpt->IndexGguf());
  return ckpt;
}

Status Checkpoint::IndexGguf() {
  const bool interleaved = config_.architecture == Architecture::kLlama;
  for (const gguf::GgufTensor& t : gguf_->tensors()) {
    if (t.name == "rope_freqs.weight") continue;  // read into the config
    CheckpointTensor tensor;
    // A tensor without a Hugging Face name keeps its own, so Validate
    // reports it as unexpected.
    tensor.name = gguf::HfTensorName(t.name).value_or(t.name);
    tensor.shape = t.Shape();
    tensor.size_bytes = t.size_bytes;
    tensor.data = t.data;
    tensor.path = &gguf_->path();
    switch (t.type) {
      case gguf::TensorType::kF32:
        tensor.dtype = TSR_DTYPE_F32;
        break;
      case gguf::TensorType::kF16:
        tensor.dtype = TSR_DTYPE_F16;
        break;
      case gguf::TensorType::kBF16:
        tensor.dtype = TSR_DTYPE_BF16;
        break;
      default:
        tensor.dtype = TSR_DTYPE_F32;
        tensor.gguf_type = t.type;
    }
    const bool qk = tensor.name.find("self_attn.q_proj.") != std::string::npos ||
                    tensor.name.find("self_attn.k_proj.") != std::string::npos;
    if (interleaved && qk) tensor.interleaved_head_dim = config_.head_dim;
    std::string name = tensor.name;
    if (!index_.emplace(name, std::move(tensor)).second) {
      return InvalidArgumentError(fmt::format(
          "{}: two tensors map to {}; the file is corrupt", dir_, name));
    }
  }
  TSR_LOG_DEBUG("{}: GGUF v{}, {} tensors, {} bytes of tensor data", dir_,
                gguf_->version(), index_.size(), gguf_->tensor_bytes());
  return OkStatus();
}

std::vector<std::string> Checkpoint::QuantizedLinearTypes() const {
  std::vector<std::string> types;
  for (const auto& [name, tensor] : index_) {
    if (!tensor.gguf_type || name.find("model.layers.") != 0 ||
        tensor.shape.size() != 2) {
      continue;
    }
    std::string type(gguf::TensorTypeName(*tensor.gguf_type));
    if (std::find(types.begin(), types.end(), type) == types.end()) {
      types.push_back(type);
    }
  }
  std::sort(types.begin(), types.end());
  return types;
}

}  // namespace tessera::model
