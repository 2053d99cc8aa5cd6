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
// Tensor bytes are read straight from the mappings (TensorRef::bytes());
// they stay valid while the Checkpoint lives.
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

namespace tessera::model {

inline constexpr std::string_view kConfigFileName = "config.json";
inline constexpr std::string_view kGenerationConfigFileName =
    "generation_config.json";
inline constexpr std::string_view kSafetensorsFileName = "model.safetensors";
inline constexpr std::string_view kSafetensorsIndexFileName =
    "model.safetensors.index.json";

// One tensor of a checkpoint: metadata plus a view of its bytes. Cheap to
// copy; valid while the Checkpoint that produced it lives.
class TensorRef {
 public:
  TensorRef(const std::string* name, const TensorInfo* info,
            const SafetensorsFile* file)
      : name_(name), info_(info), file_(file) {}

  // The name the checkpoint knows it by (see Checkpoint: a base model's
  // tensors gain the "model." prefix); the file may spell it without.
  const std::string& name() const { return *name_; }
  DType dtype() const { return info_->dtype; }  // F32, F16 or BF16
  const Shape& shape() const { return info_->shape; }
  int64_t num_elements() const { return NumElements(info_->shape); }
  size_t size_bytes() const { return info_->size_bytes; }
  // Row-major elements, little-endian; may be unaligned (see safetensors.h).
  const std::byte* data() const { return file_->Data(*info_); }
  std::span<const std::byte> bytes() const { return {data(), size_bytes()}; }
  // The safetensors file holding it (full path).
  const std::string& path() const { return file_->path(); }

 private:
  const std::string* name_;
  const TensorInfo* info_;
  const SafetensorsFile* file_;
};

class Checkpoint {
 public:
  // Opens the directory `dir`: parses config.json and
  // generation_config.json, maps and validates the safetensors file(s).
  // NotFound when config.json or the weights are missing (the message says
  // what was looked for); other codes as ParseModelConfig/SafetensorsFile.
  static StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
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
  // The base-model renaming described above.
  void AddBaseModelPrefix();

  std::string dir_;
  bool base_model_names_ = false;  // AddBaseModelPrefix renamed the tensors
  ModelConfig config_;
  GenerationConfig generation_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  // name -> (file index, tensor info inside that file)
  std::map<std::string, std::pair<size_t, const TensorInfo*>, std::less<>>
      index_;
};

}  // namespace tessera::model

#endif  // TESSERA_MODEL_CHECKPOINT_H_
