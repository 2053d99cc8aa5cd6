#include "model/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "base/bounded_json.h"
#include "base/logging.h"

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

}  // namespace

StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (!fs::exists(dir, ec)) {
      return NotFoundError(fmt::format(
          "{}: model directory not found (expected a Hugging Face checkpoint "
          "folder with config.json and *.safetensors)",
          dir));
    }
    return InvalidArgumentError(fmt::format(
        "{}: not a directory; pass the folder holding config.json", dir));
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
  for (auto& [name, where] : index_) {
    renamed.emplace(name == kLmHeadName ? name : std::string(kPrefix) + name,
                    where);
  }
  index_ = std::move(renamed);
  base_model_names_ = true;
  TSR_LOG_DEBUG("{}: tensor names without the \"model.\" prefix (a base "
                "model export); read as model.*",
                dir_);
}

Status Checkpoint::AddFile(std::unique_ptr<SafetensorsFile> file) {
  const size_t file_index = files_.size();
  for (const TensorInfo& t : file->tensors()) {
    auto [it, inserted] =
        index_.emplace(t.name, std::make_pair(file_index, &t));
    if (!inserted) {
      return InvalidArgumentError(fmt::format(
          "{}: tensor \"{}\" is in both {} and {}; a checkpoint holds each "
          "tensor once",
          dir_, t.name, files_[it->second.first]->path(), file->path()));
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
    const TensorInfo& info = *it->second.second;
    if (info.shape != spec.shape) {
      problems.push_back(
          fmt::format("shape mismatch for {} in {}: expected {}, found {}",
                      spec.name, files_[it->second.first]->path(),
                      FormatShape(spec.shape), FormatShape(info.shape)));
    }
  }
  for (const auto& [name, where] : index_) {
    if (expected_names.count(name) != 0 || IsIgnoredCheckpointTensor(name)) {
      continue;
    }
    problems.push_back(fmt::format("unexpected tensor {} (shape {}) in {}",
                                   name, FormatShape(where.second->shape),
                                   files_[where.first]->path()));
  }
  if (problems.empty()) return OkStatus();
  const size_t total = problems.size();
  if (total > kMaxReportedProblems) {
    problems.resize(kMaxReportedProblems);
    problems.push_back(
        fmt::format("... and {} more", total - kMaxReportedProblems));
  }
  return InvalidArgumentError(fmt::format(
      "{}: the weights do not match {} as config.json describes it ({} "
      "problem{}); is config.json from the same checkpoint?\n  {}{}",
      dir_, ArchitectureClassName(config_.architecture), total,
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
  return TensorRef(&it->first, it->second.second,
                   files_[it->second.first].get());
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
  for (const auto& [name, where] : index_) {
    out.emplace_back(&name, where.second, files_[where.first].get());
  }
  return out;
}

std::vector<std::string> Checkpoint::files() const {
  std::vector<std::string> out;
  for (const auto& f : files_) out.push_back(f->path());
  return out;
}

uint64_t Checkpoint::total_tensor_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, where] : index_) total += where.second->size_bytes;
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
