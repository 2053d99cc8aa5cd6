#include "model/pooling_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/file_checks.h"
#include "gguf/gguf_reader.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::string_view kModulePrefix = "sentence_transformers.models.";

StatusOr<Json> ReadJsonFile(const std::string& path) {
  TSR_ASSIGN_OR_RETURN(std::string text, ::tessera::ReadTextFile(path, "embedding model file"));
  auto parsed = ParseBoundedJson(text);
  if (!parsed.ok()) {
    return InvalidArgumentError(
        fmt::format("{}: malformed JSON: {}", path, parsed.status().message()));
  }
  return std::move(*parsed);
}

// The Pooling module's config.json: exactly one supported mode set.
StatusOr<PoolingMode> ReadPoolingMode(const std::string& path) {
  TSR_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
  if (!j.is_object()) {
    return InvalidArgumentError(fmt::format("{}: expected a JSON object", path));
  }
  std::vector<PoolingMode> modes;
  for (const auto& [key, value] : j.items()) {
    if (key.rfind("pooling_mode_", 0) != 0 || !value.is_boolean() ||
        !value.get<bool>()) {
      continue;
    }
    if (key == "pooling_mode_lasttoken") {
      modes.push_back(PoolingMode::kLast);
    } else if (key == "pooling_mode_mean_tokens") {
      modes.push_back(PoolingMode::kMean);
    } else if (key == "pooling_mode_cls_token") {
      modes.push_back(PoolingMode::kCls);
    } else {
      return UnimplementedError(fmt::format(
          "{}: {} is not supported (supported: pooling_mode_lasttoken, "
          "pooling_mode_mean_tokens, pooling_mode_cls_token)",
          path, key));
    }
  }
  if (j.contains("include_prompt") && j["include_prompt"].is_boolean() &&
      !j["include_prompt"].get<bool>()) {
    return UnimplementedError(fmt::format(
        "{}: include_prompt false (pooling that skips an instruction prefix) "
        "is not supported",
        path));
  }
  if (modes.size() != 1) {
    return InvalidArgumentError(fmt::format(
        "{}: expected exactly one pooling_mode_* set to true, found {}", path,
        modes.size()));
  }
  return modes.front();
}

}  // namespace

std::string_view PoolingModeName(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::kLast:
      return "last";
    case PoolingMode::kMean:
      return "mean";
    case PoolingMode::kCls:
      return "cls";
  }
  return "";
}

namespace {

// A GGUF file's <arch>.pooling_type (llama.cpp's enum llama_pooling_type:
// 0 none, 1 mean, 2 cls, 3 last, 4 rank); none or absent: the default.
StatusOr<PoolingConfig> GgufPoolingConfig(const std::string& path) {
  PoolingConfig config;
  TSR_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::Open(path));
  TSR_ASSIGN_OR_RETURN(auto arch, file->GetString("general.architecture"));
  if (!arch) return config;
  TSR_ASSIGN_OR_RETURN(auto type, file->GetInt(*arch + ".pooling_type"));
  switch (type.value_or(0)) {
    case 0:
    case 3:
      config.mode = PoolingMode::kLast;
      break;
    case 1:
      config.mode = PoolingMode::kMean;
      break;
    case 2:
      config.mode = PoolingMode::kCls;
      break;
    default:
      return UnimplementedError(fmt::format(
          "{}: {}.pooling_type {} (rank or unknown); Tessera pools mean, cls "
          "or last",
          path, *arch, *type));
  }
  return config;
}

}  // namespace

StatusOr<PoolingConfig> LoadPoolingConfig(const std::string& dir) {
  if (gguf::IsGgufFile(dir)) return GgufPoolingConfig(dir);
  PoolingConfig config;
  const fs::path root(dir);
  const std::string modules_path = (root / "modules.json").string();
  std::error_code ec;
  if (!fs::exists(modules_path, ec)) return config;
  TSR_ASSIGN_OR_RETURN(Json modules, ReadJsonFile(modules_path));
  if (!modules.is_array()) {
    return InvalidArgumentError(
        fmt::format("{}: expected a list of modules", modules_path));
  }
  config.normalize = false;
  bool pooled = false;
  for (const Json& m : modules) {
    if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) {
      return InvalidArgumentError(fmt::format(
          "{}: every module needs a \"type\" string, found {}", modules_path,
          m.dump()));
    }
    const std::string type = m["type"].get<std::string>();
    const std::string_view name =
        std::string_view(type).substr(0, kModulePrefix.size()) == kModulePrefix
            ? std::string_view(type).substr(kModulePrefix.size())
            : std::string_view(type);
    if (name == "Transformer") continue;
    if (name == "Normalize") {
      config.normalize = true;
      continue;
    }
    if (name == "Pooling") {
      const std::string path =
          m.contains("path") && m["path"].is_string() ? m["path"].get<std::string>() : "";
      if (path.empty() || path.find("..") != std::string::npos) {
        return InvalidArgumentError(fmt::format(
            "{}: the Pooling module needs a \"path\" inside the model folder",
            modules_path));
      }
      TSR_ASSIGN_OR_RETURN(config.mode,
                           ReadPoolingMode((root / path / "config.json").string()));
      pooled = true;
      continue;
    }
    return UnimplementedError(fmt::format(
        "{}: module {} is not supported (Tessera runs Transformer, Pooling "
        "and Normalize); its output would differ from the model's",
        modules_path, type));
  }
  if (!pooled) {
    return InvalidArgumentError(fmt::format(
        "{}: no Pooling module; an embedding model needs one", modules_path));
  }
  return config;
}

RowRange PoolingRows(PoolingMode mode, int64_t first, int64_t n,
                     int64_t prompt_len) {
  switch (mode) {
    case PoolingMode::kLast:
      if (first + n >= prompt_len) return {prompt_len - 1 - first, prompt_len - first};
      return {};
    case PoolingMode::kCls:
      if (first == 0) return {0, 1};
      return {};
    case PoolingMode::kMean:
      return {0, n};
  }
  return {};
}

HiddenPooler::HiddenPooler(const PoolingConfig& config, int64_t hidden)
    : config_(config), hidden_(hidden), sum_(static_cast<size_t>(hidden), 0.0) {}

void HiddenPooler::Add(std::span<const float> rows) {
  const int64_t k = static_cast<int64_t>(rows.size()) / hidden_;
  for (int64_t r = 0; r < k; ++r) {
    const float* row = rows.data() + r * hidden_;
    if (config_.mode != PoolingMode::kMean) {
      // kLast / kCls add exactly the one row they pool.
      for (int64_t i = 0; i < hidden_; ++i) sum_[i] = row[i];
      rows_ = 1;
      continue;
    }
    for (int64_t i = 0; i < hidden_; ++i) sum_[i] += row[i];
    ++rows_;
  }
}

std::vector<float> HiddenPooler::Finish() const {
  if (rows_ == 0) return {};
  std::vector<float> out(sum_.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<float>(sum_[i] / static_cast<double>(rows_));
  }
  if (config_.normalize) NormalizeL2(out);
  return out;
}

void NormalizeL2(std::span<float> v) {
  double norm = 0;
  for (float x : v) norm += static_cast<double>(x) * x;
  norm = std::sqrt(norm);
  if (norm == 0) return;
  for (float& x : v) x = static_cast<float>(x / norm);
}

}  // namespace tessera::model
