#include "model/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "base/bounded_json.h"
#include "base/cpu_features.h"
#include "base/logging.h"
#include "gguf/block_decode.h"
#include "gguf/gguf_reader.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// At most this many problems are spelled out by Validate.
constexpr size_t kMaxReportedProblems = 40;

bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." &&
         name != "..";
}

float LoadFloat(const std::byte* src, DType dtype, int64_t i) {
  switch (dtype) {
    case TSR_DTYPE_F32: {
      float v;
      std::memcpy(&v, src + 4 * i, 4);
      return v;
    }
    case TSR_DTYPE_BF16: {
      uint16_t b;
      std::memcpy(&b, src + 2 * i, 2);
      return Bf16ToFloat(b);
    }
    default: {
      uint16_t b;
      std::memcpy(&b, src + 2 * i, 2);
      return F16ToFloat(b);
    }
  }
}

// The stored row holding row `row` of a q/k projection whose heads of
// `head_dim` rows GGUF keeps in the interleaved rotary order: Hugging Face
// row h*D + j*D/2 + i is GGUF row h*D + 2i + j (the inverse of
// gguf::InterleavedRopeSourceRow).
int64_t InterleavedStoredRow(int64_t row, int64_t head_dim) {
  const int64_t head = row / head_dim;
  const int64_t k = row % head_dim;
  const int64_t half = head_dim / 2;
  return head * head_dim + 2 * (k % half) + k / half;
}

#if defined(__x86_64__) && defined(__GNUC__)
// Eight floats to BF16, rounded to nearest even with NaNs kept quiet (as
// FloatToBf16).
__attribute__((target("avx2"))) inline void StoreBf16x8(__m256 f, uint16_t* out) {
  const __m256i bits = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i abs = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
  const __m256i out32 = _mm256_blendv_epi8(rounded, quiet, nan);
  // 8 x 32-bit -> 8 x 16-bit (the values are 0..65535, which packus keeps).
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out32, out32), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(packed));
}

// F16 (widened exactly with F16C, as F16ToFloat) or F32 elements to `dst`:
// F32, or BF16 as FloatToBf16 rounds. The loader converts whole embedding
// tables this way (155M elements for qwen3-0.6b), which element by element
// was most of an F16 or quantized GGUF's conversion time.
__attribute__((target("avx2,f16c"))) void ConvertFloatsVector(const std::byte* src,
                                                              DType src_dtype, void* dst,
                                                              DType dst_dtype, int64_t count) {
  const bool from_f16 = src_dtype == TSR_DTYPE_F16;
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 f =
        from_f16 ? _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i)))
                 : _mm256_loadu_ps(reinterpret_cast<const float*>(src + 4 * i));
    if (dst_dtype == TSR_DTYPE_F32) {
      _mm256_storeu_ps(static_cast<float*>(dst) + i, f);
    } else {
      StoreBf16x8(f, static_cast<uint16_t*>(dst) + i);
    }
  }
  for (; i < count; ++i) {
    const float f = LoadFloat(src, src_dtype, i);
    if (dst_dtype == TSR_DTYPE_F32) {
      static_cast<float*>(dst)[i] = f;
    } else {
      static_cast<uint16_t*>(dst)[i] = FloatToBf16(f);
    }
  }
}

#endif

}  // namespace

void ConvertFloatElements(const std::byte* src, DType src_dtype, void* dst,
                          DType dst_dtype, int64_t count) {
  if (src_dtype == dst_dtype) {
    std::memcpy(dst, src, static_cast<size_t>(count) * DTypeSize(src_dtype));
    return;
  }
#if defined(__x86_64__) && defined(__GNUC__)
  if ((src_dtype == TSR_DTYPE_F16 || src_dtype == TSR_DTYPE_F32) &&
      (dst_dtype == TSR_DTYPE_F32 || dst_dtype == TSR_DTYPE_BF16) && HostHasAvx2() && HostHasF16c()) {
    ConvertFloatsVector(src, src_dtype, dst, dst_dtype, count);
    return;
  }
#endif
  switch (dst_dtype) {
    case TSR_DTYPE_F32: {
      auto* out = static_cast<float*>(dst);
      for (int64_t i = 0; i < count; ++i) out[i] = LoadFloat(src, src_dtype, i);
      break;
    }
    case TSR_DTYPE_BF16: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) {
        out[i] = FloatToBf16(LoadFloat(src, src_dtype, i));
      }
      break;
    }
    default: {
      auto* out = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < count; ++i) {
        out[i] = FloatToF16(LoadFloat(src, src_dtype, i));
      }
      break;
    }
  }
}

std::string TensorRef::StorageName() const {
  if (t_->gguf_type) return std::string(gguf::TensorTypeName(*t_->gguf_type));
  std::string name(DTypeName(t_->dtype));
  for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

void TensorRef::ReadRows(int64_t row0, int64_t rows, int64_t col0,
                         int64_t cols, DType dst, void* out) const {
  const Shape& shape = t_->shape;
  const int64_t width = shape.size() >= 2 ? NumElements(shape) / shape[0] : 1;
  const size_t dst_size = DTypeSize(dst);
  auto stored_row = [&](int64_t r) {
    return t_->interleaved_head_dim > 0
               ? InterleavedStoredRow(r, t_->interleaved_head_dim)
               : r;
  };
  if (!t_->gguf_type) {
    const size_t src_size = DTypeSize(t_->dtype);
    if (cols == width && t_->interleaved_head_dim == 0) {  // one run
      ConvertFloatElements(t_->data + size_t(row0 * width) * src_size,
                           t_->dtype, out, dst, rows * cols);
      return;
    }
    for (int64_t i = 0; i < rows; ++i) {
      ConvertFloatElements(
          t_->data + size_t(stored_row(row0 + i) * width + col0) * src_size,
          t_->dtype, static_cast<char*>(out) + size_t(i * cols) * dst_size,
          dst, cols);
    }
    return;
  }
  // Block-quantized: decode whole stored rows (blocks run along them).
  const gguf::TensorType type = *t_->gguf_type;
  const uint64_t row_bytes = *gguf::RowBytes(type, width);
  std::vector<float> row(static_cast<size_t>(width));
  for (int64_t i = 0; i < rows; ++i) {
    gguf::DecodeRow(type, t_->data + stored_row(row0 + i) * row_bytes, width,
                    row.data());
    ConvertFloatElements(reinterpret_cast<const std::byte*>(row.data() + col0),
                         TSR_DTYPE_F32,
                         static_cast<char*>(out) + size_t(i * cols) * dst_size,
                         dst, cols);
  }
}

Checkpoint::~Checkpoint() = default;

StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  std::error_code ec;
  if (gguf::IsGgufFile(dir)) return OpenGguf(dir);
  if (!fs::is_directory(dir, ec)) {
    if (!fs::exists(dir, ec)) {
      return NotFoundError(fmt::format(
          "{}: model directory not found (expected a Hugging Face checkpoint "
          "folder with config.json and *.safetensors)",
          dir));
    }
    return InvalidArgumentError(fmt::format(
        "{}: neither a directory nor a GGUF file; pass the folder holding "
        "config.json or a .gguf file",
        dir));
  }
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint());
  ckpt->dir_ = dir;
  const fs::path root(dir);

  const std::string config_path = (root / kConfigFileName).string();
  if (!fs::exists(config_path, ec)) {
    return NotFoundError(fmt::format(
        "{}: no config.json; is this a Hugging Face model directory?", dir));
  }
  TSR_ASSIGN_OR_RETURN(ckpt->config_, LoadModelConfig(config_path));
  TSR_ASSIGN_OR_RETURN(
      ckpt->generation_,
      LoadGenerationConfig((root / kGenerationConfigFileName).string()));

  const std::string single = (root / kSafetensorsFileName).string();
  const std::string index = (root / kSafetensorsIndexFileName).string();
  if (fs::exists(single, ec)) {
    TSR_RETURN_IF_ERROR(ckpt->OpenSingle(single));
  } else if (fs::exists(index, ec)) {
    TSR_RETURN_IF_ERROR(ckpt->OpenSharded(index));
  } else {
    std::string hint;
    if (fs::exists(root / "pytorch_model.bin", ec) ||
        fs::exists(root / "pytorch_model.bin.index.json", ec)) {
      hint =
          "; it has pytorch_model.bin, which Tessera does not read: "
          "convert it to safetensors";
    }
    return NotFoundError(
        fmt::format("{}: no weights: neither {} nor {} exists{}", dir,
                    kSafetensorsFileName, kSafetensorsIndexFileName, hint));
  }
  ckpt->AddBaseModelPrefix();
  return ckpt;
}

void Checkpoint::AddBaseModelPrefix() {
  constexpr std::string_view kPrefix = "model.";
  if (index_.count("embed_tokens.weight") == 0) return;
  for (const auto& [name, where] : index_) {
    if (std::string_view(name).substr(0, kPrefix.size()) == kPrefix) return;
  }
  decltype(index_) renamed;
  for (auto& [name, tensor] : index_) {
    std::string new_name =
        name == kLmHeadName ? name : std::string(kPrefix) + name;
    tensor.name = new_name;
    renamed.emplace(std::move(new_name), std::move(tensor));
  }
  index_ = std::move(renamed);
  base_model_names_ = true;
  TSR_LOG_DEBUG("{}: tensor names without the \"model.\" prefix (a base "
                "model export); read as model.*",
                dir_);
}

Status Checkpoint::AddFile(std::unique_ptr<SafetensorsFile> file) {
  for (const TensorInfo& t : file->tensors()) {
    CheckpointTensor tensor;
    tensor.name = t.name;
    tensor.dtype = t.dtype;
    tensor.shape = t.shape;
    tensor.size_bytes = t.size_bytes;
    tensor.data = file->Data(t);
    tensor.path = &file->path();
    auto [it, inserted] = index_.emplace(t.name, std::move(tensor));
    if (!inserted) {
      return InvalidArgumentError(fmt::format(
          "{}: tensor \"{}\" is in both {} and {}; a checkpoint holds each "
          "tensor once",
          dir_, t.name, *it->second.path, file->path()));
    }
  }
  files_.push_back(std::move(file));
  return OkStatus();
}

Status Checkpoint::OpenSingle(const std::string& path) {
  TSR_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(path));
  return AddFile(std::move(file));
}

Status Checkpoint::OpenSharded(const std::string& index_path) {
  TSR_ASSIGN_OR_RETURN(std::string text, ReadTextFile(index_path));
  auto parsed = ParseBoundedJson(text);
  if (!parsed.ok()) {
    return InvalidArgumentError(fmt::format(
        "{}: malformed JSON: {}", index_path, parsed.status().message()));
  }
  Json root = std::move(*parsed);
  auto map_it = root.is_object() ? root.find("weight_map") : root.end();
  if (!root.is_object() || map_it == root.end() || !map_it->is_object()) {
    return InvalidArgumentError(fmt::format(
        "{}: expected an object with a \"weight_map\" object (tensor name -> "
        "shard file)",
        index_path));
  }
  // shard file -> tensor names the index places there
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [name, shard] : map_it->items()) {
    if (!shard.is_string() || !IsPlainFileName(shard.get<std::string>())) {
      return InvalidArgumentError(fmt::format(
          "{}: weight_map[\"{}\"] must be a file name in the same directory, "
          "found {}",
          index_path, name, shard.dump()));
    }
    shards[shard.get<std::string>()].push_back(name);
  }
  if (shards.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: weight_map is empty", index_path));
  }
  std::vector<std::string> missing;
  std::error_code ec;
  for (const auto& [shard, names] : shards) {
    if (!fs::exists(fs::path(dir_) / shard, ec)) {
      missing.push_back(fmt::format("{} ({} tensors, e.g. {})", shard,
                                    names.size(), names.front()));
    }
  }
  if (!missing.empty()) {
    return NotFoundError(fmt::format(
        "{}: {} shard file(s) named in {} are missing: {}; download the "
        "complete checkpoint",
        dir_, missing.size(), kSafetensorsIndexFileName,
        fmt::join(missing, ", ")));
  }
  for (const auto& [shard, names] : shards) {
    const std::string path = (fs::path(dir_) / shard).string();
    TSR_ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(path));
    for (const std::string& name : names) {
      if (file->Find(name) == nullptr) {
        return InvalidArgumentError(fmt::format(
            "{}: weight_map places tensor \"{}\" in {}, but that file has no "
            "such tensor",
            index_path, name, path));
      }
    }
    if (file->tensors().size() != names.size()) {
      TSR_LOG_DEBUG("{}: {} holds {} tensors, the index names {}", index_path,
                    path, file->tensors().size(), names.size());
    }
    TSR_RETURN_IF_ERROR(AddFile(std::move(file)));
  }
  return OkStatus();
}

Status Checkpoint::Validate() const {
  return Validate(ExpectedWeights(config_));
}

Status Checkpoint::Validate(std::span<const WeightSpec> expected) const {
  std::vector<std::string> problems;
  std::set<std::string_view> expected_names;
  for (const WeightSpec& spec : expected) {
    expected_names.insert(spec.name);
    auto it = index_.find(spec.name);
    if (it == index_.end()) {
      if (!spec.optional) {
        problems.push_back(fmt::format("missing tensor {} (expected shape {})",
                                       spec.name, FormatShape(spec.shape)));
      }
      continue;
    }
    const CheckpointTensor& info = it->second;
    if (info.shape != spec.shape) {
      problems.push_back(
          fmt::format("shape mismatch for {} in {}: expected {}, found {}",
                      spec.name, *info.path, FormatShape(spec.shape),
                      FormatShape(info.shape)));
    }
  }
  for (const auto& [name, tensor] : index_) {
    if (expected_names.count(name) != 0 || IsIgnoredCheckpointTensor(name)) {
      continue;
    }
    problems.push_back(fmt::format("unexpected tensor {} (shape {}) in {}",
                                   name, FormatShape(tensor.shape),
                                   *tensor.path));
  }
  if (problems.empty()) return OkStatus();
  const size_t total = problems.size();
  if (total > kMaxReportedProblems) {
    problems.resize(kMaxReportedProblems);
    problems.push_back(
        fmt::format("... and {} more", total - kMaxReportedProblems));
  }
  return InvalidArgumentError(fmt::format(
      "{}: the weights do not match {} as {} describes it ({} "
      "problem{}); is config.json from the same checkpoint?\n  {}{}",
      dir_, ArchitectureClassName(config_.architecture),
      is_gguf() ? "the GGUF metadata" : "config.json", total,
      total == 1 ? "" : "s", fmt::join(problems, "\n  "),
      base_model_names_ && index_.count(kLmHeadName) == 0
          ? "\n  (a base-model export without an output head, e.g. a "
            "sentence-transformers embedding model: serve it with "
            "--is-embedding)"
          : ""));
}

std::optional<TensorRef> Checkpoint::Find(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) return std::nullopt;
  return TensorRef(&it->second);
}

StatusOr<TensorRef> Checkpoint::Get(std::string_view name) const {
  std::optional<TensorRef> ref = Find(name);
  if (!ref) {
    return NotFoundError(
        fmt::format("{}: the checkpoint has no tensor \"{}\"", dir_, name));
  }
  return *ref;
}

std::vector<TensorRef> Checkpoint::tensors() const {
  std::vector<TensorRef> out;
  out.reserve(index_.size());
  for (const auto& [name, tensor] : index_) out.emplace_back(&tensor);
  return out;
}

std::vector<std::string> Checkpoint::files() const {
  std::vector<std::string> out;
  if (gguf_) out.push_back(gguf_->path());
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

uint64_t Checkpoint::total_tensor_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, tensor] : index_) total += tensor.size_bytes;
  return total;
}

std::vector<int32_t> Checkpoint::EosTokenIds() const {
  std::vector<int32_t> ids;
  for (const auto* list :
       {&generation_.eos_token_ids, &config_.eos_token_ids}) {
    for (int32_t id : *list) {
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
  }
  return ids;
}

}  // namespace tessera::model
