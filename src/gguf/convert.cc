#include "gguf/convert.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "gguf/tensor_encode.h"
#include "model/checkpoint.h"
#include "model/pooling_config.h"
#include "model/rope.h"
#include "model/weight_spec.h"

namespace tessera::gguf {
namespace {

using model::Architecture;
using model::Checkpoint;
using model::ModelConfig;
using model::TensorRef;

// Bytes handed to the writer per chunk.
constexpr size_t kChunkBytes = size_t(4) << 20;

std::string_view GgufArchName(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama:
      return "llama";
    case Architecture::kQwen2:
      return "qwen2";
    case Architecture::kQwen3:
      return "qwen3";
  }
  return "unknown";
}

Status CheckSupported(const ModelConfig& c, const std::string& dir) {
  if (c.architecture == Architecture::kQwen2 &&
      c.num_attention_heads * c.head_dim != c.hidden_size) {
    return UnimplementedError(fmt::format(
        "{}: Qwen2 with num_attention_heads * head_dim ({} * {}) != "
        "hidden_size ({}); llama.cpp's qwen2 assumes they are equal",
        dir, c.num_attention_heads, c.head_dim, c.hidden_size));
  }
  if (c.architecture == Architecture::kQwen3 && c.has_o_bias()) {
    return UnimplementedError(fmt::format(
        "{}: Qwen3 with attention_bias; llama.cpp's qwen3 has no slot for "
        "the o_proj bias",
        dir));
  }
  if (c.rope_scaling.type != model::RopeScaling::Type::kDefault &&
      c.architecture != Architecture::kLlama) {
    return UnimplementedError(fmt::format(
        "{}: llama3 rope_scaling on {}; llama.cpp reads rope_freqs only for "
        "llama",
        dir, model::ArchitectureClassName(c.architecture)));
  }
  return OkStatus();
}

// The tensor's rows (a 1-D tensor is one row per element for permuting,
// one row in all for encoding) streamed as `type`, with `source_row`
// choosing which input row becomes each output row.
GgufWriter::TensorSource RowSource(TensorRef ref, TensorType type,
                                   std::function<int64_t(int64_t)> source_row) {
  return [ref, type, source_row = std::move(source_row)](
             const GgufWriter::ByteSink& sink) -> Status {
    const auto& shape = ref.shape();
    const bool one_d = shape.size() == 1;
    // Permutation granularity: a row of a matrix, an element of a vector.
    const int64_t rows = shape.empty() ? 1 : shape[0];
    const int64_t cols = one_d || shape.empty() ? 1 : shape.back();
    const size_t in_row_bytes = size_t(cols) * DTypeSize(ref.dtype());
    const bool copy_raw =
        (type == TensorType::kF32 && ref.dtype() == TSR_DTYPE_F32) ||
        (type == TensorType::kF16 && ref.dtype() == TSR_DTYPE_F16) ||
        (type == TensorType::kBF16 && ref.dtype() == TSR_DTYPE_BF16);
    const int64_t encode_cols = one_d ? rows : cols;
    auto out_row = RowBytes(type, encode_cols);
    if (!out_row) {
      return InvalidArgumentError(
          fmt::format("rows of {} elements cannot be stored as {}", encode_cols,
                      TensorTypeName(type)));
    }
    std::vector<std::byte> chunk;
    chunk.reserve(kChunkBytes + *out_row);
    std::vector<float> floats(static_cast<size_t>(encode_cols));
    auto flush = [&]() -> Status {
      if (chunk.empty()) return OkStatus();
      TSR_RETURN_IF_ERROR(sink(chunk));
      chunk.clear();
      return OkStatus();
    };
    if (one_d) {
      // Gather (permuted) elements, then encode the vector as one row.
      std::vector<std::byte> gathered(size_t(rows) * DTypeSize(ref.dtype()));
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(gathered.data() + size_t(r) * in_row_bytes,
                    ref.data() + size_t(source_row(r)) * in_row_bytes,
                    in_row_bytes);
      }
      DecodeToFloat(gathered.data(), ref.dtype(), floats);
      chunk.resize(*out_row);
      TSR_RETURN_IF_ERROR(EncodeRow(floats, type, chunk));
      return flush();
    }
    for (int64_t r = 0; r < rows; ++r) {
      const std::byte* in = ref.data() + size_t(source_row(r)) * in_row_bytes;
      const size_t at = chunk.size();
      chunk.resize(at + *out_row);
      std::span<std::byte> out(chunk.data() + at, *out_row);
      if (copy_raw) {
        std::memcpy(out.data(), in, in_row_bytes);
      } else {
        DecodeToFloat(in, ref.dtype(), floats);
        TSR_RETURN_IF_ERROR(EncodeRow(floats, type, out));
      }
      if (chunk.size() >= kChunkBytes) TSR_RETURN_IF_ERROR(flush());
    }
    return flush();
  };
}

// Llama 3 rope_freqs: default inv_freq / scaled inv_freq, [D/2].
std::vector<float> RopeFreqFactors(const ModelConfig& c) {
  auto plain = model::ComputeRopeInvFreq(c.head_dim, c.rope_theta, {});
  auto scaled =
      model::ComputeRopeInvFreq(c.head_dim, c.rope_theta, c.rope_scaling);
  std::vector<float> factors(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    factors[i] = float(plain[i] / scaled[i]);
  }
  return factors;
}

void SetModelMetadata(const ModelConfig& c, std::string_view arch,
                      const std::string& name, TensorType type, GgufWriter& w) {
  const std::string a(arch);
  w.SetString("general.architecture", a);
  w.SetString("general.name", name);
  w.SetU32("general.file_type", uint32_t(FileTypeFor(type)));
  w.SetU32("general.quantization_version", 2);
  w.SetU32(a + ".vocab_size", uint32_t(c.vocab_size));
  w.SetU32(a + ".context_length", uint32_t(c.max_position_embeddings));
  w.SetU32(a + ".embedding_length", uint32_t(c.hidden_size));
  w.SetU32(a + ".block_count", uint32_t(c.num_hidden_layers));
  w.SetU32(a + ".feed_forward_length", uint32_t(c.intermediate_size));
  w.SetU32(a + ".attention.head_count", uint32_t(c.num_attention_heads));
  w.SetU32(a + ".attention.head_count_kv", uint32_t(c.num_key_value_heads));
  w.SetU32(a + ".attention.key_length", uint32_t(c.head_dim));
  w.SetU32(a + ".attention.value_length", uint32_t(c.head_dim));
  w.SetU32(a + ".rope.dimension_count", uint32_t(c.head_dim));
  w.SetF32(a + ".attention.layer_norm_rms_epsilon", float(c.rms_norm_eps));
  w.SetF32(a + ".rope.freq_base", float(c.rope_theta));
}

}  // namespace

int64_t InterleavedRopeSourceRow(int64_t row, int64_t head_dim) {
  const int64_t head = row / head_dim;
  const int64_t k = row % head_dim;
  const int64_t i = k / 2;
  const int64_t j = k % 2;
  return head * head_dim + j * (head_dim / 2) + i;
}

StatusOr<ConvertResult> ConvertCheckpointToGguf(
    const std::string& model_dir, const std::string& out_path, TensorType type,
    const GgufWriter::Progress& progress) {
  TSR_ASSIGN_OR_RETURN(std::unique_ptr<Checkpoint> checkpoint,
                       Checkpoint::Open(model_dir));
  if (checkpoint->is_gguf()) {
    return InvalidArgumentError(fmt::format(
        "{} is already a GGUF file; convert-gguf reads Hugging Face "
        "checkpoint folders",
        model_dir));
  }
  // An embedding export (sentence-transformers: no output head) converts
  // too; its pooling is written as <arch>.pooling_type.
  const bool embedding = !checkpoint->Find(model::kLmHeadName) &&
                         !checkpoint->config().tie_word_embeddings;
  TSR_RETURN_IF_ERROR(embedding
                          ? checkpoint->Validate(model::ExpectedEmbeddingWeights(
                                checkpoint->config()))
                          : checkpoint->Validate());
  const ModelConfig& c = checkpoint->config();
  TSR_RETURN_IF_ERROR(CheckSupported(c, model_dir));

  ConvertResult result;
  result.architecture = std::string(GgufArchName(c.architecture));
  std::string name =
      std::filesystem::path(model_dir).lexically_normal().filename().string();
  if (name.empty()) {
    name = std::filesystem::path(model_dir)
               .lexically_normal()
               .parent_path()
               .filename()
               .string();
  }

  GgufWriter writer;
  SetModelMetadata(c, result.architecture, name, type, writer);

  VocabOptions vocab;
  vocab.vocab_size = c.vocab_size;
  vocab.bos_token_id = c.bos_token_id
                           ? c.bos_token_id
                           : checkpoint->generation_config().bos_token_id;
  std::vector<int32_t> eos = checkpoint->EosTokenIds();
  if (!eos.empty()) vocab.eos_token_id = eos.front();
  TSR_ASSIGN_OR_RETURN(result.vocab,
                       AddTokenizerMetadata(model_dir, vocab, writer));
  for (const auto& note : result.vocab.notes) result.notes.push_back(note);

  const bool interleave = c.architecture == Architecture::kLlama;
  if (embedding) {
    TSR_ASSIGN_OR_RETURN(model::PoolingConfig pooling,
                         model::LoadPoolingConfig(model_dir));
    // llama.cpp's enum llama_pooling_type: 1 mean, 2 cls, 3 last.
    const uint32_t type = pooling.mode == model::PoolingMode::kMean  ? 1
                          : pooling.mode == model::PoolingMode::kCls ? 2
                                                                     : 3;
    writer.SetU32(result.architecture + ".pooling_type", type);
    result.notes.push_back(fmt::format(
        "an embedding model ({} pooling): no output head; serve it with "
        "--is-embedding",
        model::PoolingModeName(pooling.mode)));
  }
  for (const model::WeightSpec& spec : model::ExpectedWeights(c)) {
    if (spec.name == model::kLmHeadName &&
        (c.tie_word_embeddings || embedding)) {
      continue;
    }
    std::optional<TensorRef> ref = checkpoint->Find(spec.name);
    if (!ref) continue;  // optional and absent (Validate checked the rest)
    auto gguf_name = GgufTensorName(spec.name);
    if (!gguf_name) {
      return InternalError(fmt::format(
          "no GGUF name for tensor '{}' (a converter bug)", spec.name));
    }
    const auto& shape = ref->shape();
    TensorType tensor_type = shape.size() >= 2 ? type : TensorType::kF32;
    if (!TensorBytes(tensor_type, shape)) {
      result.notes.push_back(fmt::format(
          "{}: rows of {} elements do not fill {}-element {} blocks; stored "
          "as f16",
          *gguf_name, shape.back(), BlockElements(tensor_type),
          TensorTypeName(tensor_type)));
      tensor_type = TensorType::kF16;
    }
    std::function<int64_t(int64_t)> source_row = [](int64_t r) { return r; };
    const bool is_q = spec.name.find("self_attn.q_proj.") != std::string::npos;
    const bool is_k = spec.name.find("self_attn.k_proj.") != std::string::npos;
    if (interleave && (is_q || is_k)) {
      const int64_t d = c.head_dim;
      source_row = [d](int64_t r) { return InterleavedRopeSourceRow(r, d); };
    }
    TSR_RETURN_IF_ERROR(
        writer.AddTensor(*gguf_name, shape, tensor_type,
                         RowSource(*ref, tensor_type, std::move(source_row))));
  }
  if (c.rope_scaling.type == model::RopeScaling::Type::kLlama3) {
    auto factors = std::make_shared<std::vector<float>>(RopeFreqFactors(c));
    TSR_RETURN_IF_ERROR(writer.AddTensor(
        "rope_freqs.weight", {int64_t(factors->size())}, TensorType::kF32,
        [factors](const GgufWriter::ByteSink& sink) {
          return sink(std::as_bytes(std::span<const float>(*factors)));
        }));
  }

  result.num_tensors = writer.num_tensors();
  result.tensor_bytes = writer.tensor_data_bytes();
  TSR_RETURN_IF_ERROR(writer.WriteFile(out_path, progress));
  return result;
}

}  // namespace tessera::gguf
