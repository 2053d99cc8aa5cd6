// Checkpoint: a Hugging Face model directory opened for loading — its
// config.json, generation_config.json and the index of every tensor in its
// safetensors files, memory-mapped, nothing copied.
//
// Layout read (as transformers resolves it): config.json (required),
// generation_config.json (optional; defaults otherwise), and the weights in
// either model.safetensors (preferred when both exist) or the shards that
// model.safetensors.index.json's "weight_map" names. Every file is
// validated on Open (see SafetensorsFile); a shard the index names but the
// directory lacks, a tensor the index places in a shard that does not hold
// it, and a tensor present in two shards are errors naming the files.
//
// Validate() compares the tensors with what the architecture expects
// (weight_spec.h) and reports every missing tensor, unexpected tensor and
// shape mismatch in one error, each with the tensor name, the expected and
// actual shape and the file. The model loader calls it before allocating
// any device memory, so a wrong checkpoint fails in seconds, not after a
// multi-gigabyte upload.
//
// Base-model exports (a sentence-transformers embedding model such as
// Qwen3-Embedding, saved from Qwen3Model: "embed_tokens.weight",
// "layers.0...", "norm.weight") have no "model." prefix: when no tensor
// name has it and "embed_tokens.weight" exists, every tensor but
// "lm_head.weight" is indexed as "model." + its name, so one weight spec
// serves both layouts.
//
// A GGUF file (llama.cpp's format) opens as a checkpoint too (OpenGguf,
// checkpoint_gguf.cc): its tensors under their Hugging Face names and
// shapes, F32/F16/BF16 ones mapped as they are, block-quantized ones
// (Q8_0, Q4_K, ...) and Llama's interleaved q/k rows decoded as they are
// read (TensorRef::ReadRows), so the loader and Validate see one layout.
//
// Tensor bytes are read straight from the mappings (TensorRef::bytes(),
// ReadRows); they stay valid while the Checkpoint lives.
//
// Thread-safety: immutable after Open(); any number of concurrent readers.
#ifndef TESSERA_MODEL_CHECKPOINT_H_
#define TESSERA_MODEL_CHECKPOINT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "model/generation_config.h"
#include "model/model_config.h"
#include "model/safetensors.h"
#include "model/weight_spec.h"
#include "gguf/gguf_format.h"

namespace tessera::gguf {
class GgufFile;
}  // namespace tessera::gguf

namespace tessera::model {

inline constexpr std::string_view kConfigFileName = "config.json";
inline constexpr std::string_view kGenerationConfigFileName =
    "generation_config.json";
inline constexpr std::string_view kSafetensorsFileName = "model.safetensors";
inline constexpr std::string_view kSafetensorsIndexFileName =
    "model.safetensors.index.json";


// Where and how one tensor of a checkpoint is stored. Owned by the
// Checkpoint.
struct CheckpointTensor {
  std::string name;  // as the checkpoint knows it (Hugging Face naming)
  // The dtype its elements are delivered in: the file's for F32 / F16 /
  // BF16 data, F32 for GGUF block-quantized data (gguf_type).
  DType dtype = TSR_DTYPE_INVALID;
  Shape shape;                        // row-major, outermost first
  size_t size_bytes = 0;              // bytes in the file
  const std::byte* data = nullptr;    // first byte, inside a mapping
  const std::string* path = nullptr;  // the file holding it
  // GGUF only: the stored type when it is not plain dtype elements
  // (Q8_0, Q4_K, ...; rows are whole blocks along the innermost dimension).
  std::optional<gguf::TensorType> gguf_type;
  // GGUF "llama" q/k projections store each head's rows in the interleaved
  // rotary order (gguf/convert.h); > 0: the head size to undo it with.
  int64_t interleaved_head_dim = 0;
};

// One tensor of a checkpoint: metadata plus access to its elements. Cheap
// to copy; valid while the Checkpoint that produced it lives.
class TensorRef {
 public:
  explicit TensorRef(const CheckpointTensor* t) : t_(t) {}

  // The name the checkpoint knows it by (see Checkpoint: a base model's
  // tensors gain the "model." prefix, a GGUF's are renamed); the file may
  // spell it otherwise.
  const std::string& name() const { return t_->name; }
  DType dtype() const { return t_->dtype; }  // F32, F16 or BF16
  const Shape& shape() const { return t_->shape; }
  int64_t num_elements() const { return NumElements(t_->shape); }
  // Bytes in the file (a quantized GGUF tensor's encoded size).
  size_t size_bytes() const { return t_->size_bytes; }
  // Whether data() holds the row-major dtype() elements as they are
  // (every safetensors tensor; GGUF F32/F16/BF16 ones not reordered).
  bool raw() const {
    return !t_->gguf_type.has_value() && t_->interleaved_head_dim == 0;
  }
  // The stored bytes, little-endian, may be unaligned (see safetensors.h).
  // Row-major dtype() elements only when raw(); use ReadRows otherwise.
  const std::byte* data() const { return t_->data; }
  std::span<const std::byte> bytes() const { return {data(), size_bytes()}; }
  // The file holding it (full path).
  const std::string& path() const { return *t_->path; }
  // "bf16", or the GGUF type ("q4_k") for a quantized tensor.
  std::string StorageName() const;
  // Whether data() holds GGUF Q4_0 blocks in row order (rows not
  // reordered): each row width / 32 blocks of an f16 scale and 16 bytes of
  // nibbles, the layout 4-bit weights load from without decoding.
  bool raw_q4_0() const {
    return t_->gguf_type == gguf::TensorType::kQ4_0 && t_->interleaved_head_dim == 0;
  }
  // The same for GGUF Q8_0 blocks (an f16 scale and 32 int8 weights each):
  // int8 weights with groups of 32 load from them without decoding.
  bool raw_q8_0() const {
    return t_->gguf_type == gguf::TensorType::kQ8_0 && t_->interleaved_head_dim == 0;
  }
  // Q6_K blocks (210 bytes per 256 elements) in the file's order: the
  // tensor holds GGUF Q6_K data and no reordering applies.
  bool raw_q6_k() const {
    return t_->gguf_type == gguf::TensorType::kQ6_K && t_->interleaved_head_dim == 0;
  }

  // The tensor viewed as a matrix [rows, width] (rows = shape[0], width =
  // the product of the other dimensions; a 1-D tensor is [n, 1], a scalar
  // [1, 1]): elements [row0, row0 + rows) x [col0, col0 + cols) written to
  // `out` as `dst` (F32, F16 or BF16), row-major [rows, cols]. Decodes
  // quantized rows and undoes GGUF's rotary row order. Callers pass ranges
  // inside the tensor.
  void ReadRows(int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                DType dst, void* out) const;

 private:
  const CheckpointTensor* t_;
};

// Converts `count` elements between float dtypes (F32, BF16, F16; round to
// nearest even). `src` may be unaligned; `dst` is aligned for `dst_dtype`.
void ConvertFloatElements(const std::byte* src, DType src_dtype, void* dst,
                          DType dst_dtype, int64_t count);

class Checkpoint {
 public:
  // Opens the directory `dir`: parses config.json and
  // generation_config.json, maps and validates the safetensors file(s).
  // NotFound when config.json or the weights are missing (the message says
  // what was looked for); other codes as ParseModelConfig/SafetensorsFile.
  // A path naming a GGUF file (gguf::IsGgufFile) opens it with OpenGguf.
  static StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& dir);
  // Opens a llama.cpp GGUF file (checkpoint_gguf.cc): the model config from
  // its metadata, every tensor under its Hugging Face name with its
  // Hugging Face shape, mapped, nothing decoded until read. Unimplemented
  // for an architecture, tensor type or rope scaling Tessera cannot run,
  // InvalidArgument for inconsistent metadata, before any allocation.
  static StatusOr<std::unique_ptr<Checkpoint>> OpenGguf(
      const std::string& path);
  ~Checkpoint();

  // The directory (or the GGUF file) it was opened from.
  const std::string& dir() const { return dir_; }
  // Whether it was opened from a GGUF file.
  bool is_gguf() const { return gguf_ != nullptr; }
  // A GGUF checkpoint's storage types of the decoder-layer linear weights
  // ("q4_k", "q6_k"): non-empty when some are block-quantized, so the
  // loader should keep them quantized (int8) rather than widen them.
  std::vector<std::string> QuantizedLinearTypes() const;
  const ModelConfig& config() const { return config_; }
  const GenerationConfig& generation_config() const { return generation_; }

  // Checks the tensors against `expected`: every non-optional spec present,
  // every present spec's shape equal, no tensor outside `expected` (apart
  // from IsIgnoredCheckpointTensor ones). InvalidArgument listing every
  // problem (one per line, "missing tensor ...", "unexpected tensor ...",
  // "shape mismatch ...") otherwise.
  Status Validate(std::span<const WeightSpec> expected) const;
  // Validate(ExpectedWeights(config())).
  Status Validate() const;

  // nullopt when absent.
  std::optional<TensorRef> Find(std::string_view name) const;
  // NotFound naming the tensor and the directory when absent.
  StatusOr<TensorRef> Get(std::string_view name) const;
  // All tensors, sorted by name.
  std::vector<TensorRef> tensors() const;
  size_t num_tensors() const { return index_.size(); }
  // Paths of the safetensors files, in the order they were opened.
  std::vector<std::string> files() const;
  // Sum of all tensors' bytes.
  uint64_t total_tensor_bytes() const;

  // Ids that end generation: generation_config.json's eos_token_id(s)
  // followed by config.json's, without repeats.
  std::vector<int32_t> EosTokenIds() const;

 private:
  Checkpoint() = default;
  Status OpenSingle(const std::string& path);
  Status OpenSharded(const std::string& index_path);
  Status AddFile(std::unique_ptr<SafetensorsFile> file);
  Status IndexGguf();  // checkpoint_gguf.cc
  // The base-model renaming described above.
  void AddBaseModelPrefix();

  std::string dir_;
  bool base_model_names_ = false;  // AddBaseModelPrefix renamed the tensors
  ModelConfig config_;
  GenerationConfig generation_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unique_ptr<gguf::GgufFile> gguf_;  // OpenGguf only
  // name -> where and how it is stored
  std::map<std::string, CheckpointTensor, std::less<>> index_;
};

}  // namespace tessera::model

#endif  // TESSERA_MODEL_CHECKPOINT_H_
