#include "model/model_config.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "base/bounded_json.h"
#include "base/file_checks.h"

namespace tessera::model {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

constexpr Architecture kAllArchitectures[] = {
    Architecture::kLlama, Architecture::kQwen2, Architecture::kQwen3};

// Typed access to config.json fields with messages naming the key.
class Fields {
 public:
  Fields(const Json& root, std::string_view source)
      : root_(root), source_(source) {}

  Status Error(std::string_view key, std::string_view what) const {
    return InvalidArgumentError(
        fmt::format("{}: \"{}\" {}", source_, key, what));
  }

  const Json* Find(std::string_view key) const {
    auto it = root_.find(std::string(key));
    if (it == root_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // An integer (a float with an integral value is accepted too).
  StatusOr<std::optional<int64_t>> Int(std::string_view key) const {
    const Json* j = Find(key);
    if (j == nullptr) return std::optional<int64_t>();
    TSR_ASSIGN_OR_RETURN(int64_t v, ToInt(*j, key));
    return std::optional<int64_t>(v);
  }
  StatusOr<int64_t> RequiredInt(std::string_view key) const {
    TSR_ASSIGN_OR_RETURN(std::optional<int64_t> v, Int(key));
    if (!v) {
      return Error(key,
                   "is missing; every config.json of this "
                   "architecture must set it");
    }
    return *v;
  }
  StatusOr<int64_t> IntOr(std::string_view key, int64_t fallback) const {
    TSR_ASSIGN_OR_RETURN(std::optional<int64_t> v, Int(key));
    return v.value_or(fallback);
  }
  StatusOr<double> DoubleOr(std::string_view key, double fallback) const {
    const Json* j = Find(key);
    if (j == nullptr) return fallback;
    if (!j->is_number()) {
      return Error(key,
                   fmt::format("must be a number, found {}", j->type_name()));
    }
    return j->get<double>();
  }
  StatusOr<bool> BoolOr(std::string_view key, bool fallback) const {
    const Json* j = Find(key);
    if (j == nullptr) return fallback;
    if (!j->is_boolean()) {
      return Error(key,
                   fmt::format("must be true or false, found {}", j->dump()));
    }
    return j->get<bool>();
  }
  StatusOr<std::string> StringOr(std::string_view key,
                                 std::string fallback) const {
    const Json* j = Find(key);
    if (j == nullptr) return fallback;
    if (!j->is_string()) {
      return Error(key,
                   fmt::format("must be a string, found {}", j->type_name()));
    }
    return j->get<std::string>();
  }
  // An int, a list of ints, or absent/null (empty).
  StatusOr<std::vector<int32_t>> IntList(std::string_view key) const {
    std::vector<int32_t> out;
    const Json* j = Find(key);
    if (j == nullptr) return out;
    if (j->is_array()) {
      for (const Json& item : *j) {
        TSR_ASSIGN_OR_RETURN(int64_t v, ToInt(item, key));
        out.push_back(static_cast<int32_t>(v));
      }
      return out;
    }
    TSR_ASSIGN_OR_RETURN(int64_t v, ToInt(*j, key));
    out.push_back(static_cast<int32_t>(v));
    return out;
  }

 private:
  StatusOr<int64_t> ToInt(const Json& j, std::string_view key) const {
    if (j.is_number_integer()) return j.get<int64_t>();
    if (j.is_number_float()) {
      double d = j.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
        return static_cast<int64_t>(d);
      }
    }
    return Error(key, fmt::format("must be an integer, found {}", j.dump()));
  }

  const Json& root_;
  std::string_view source_;
};

Status ParseRopeScaling(const Json& scaling, std::string_view key,
                        std::string_view source, ModelConfig* config) {
  if (!scaling.is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: \"{}\" must be null or an object, found {}", source,
                    key, scaling.dump()));
  }
  Fields f(scaling, source);
  std::string type;
  for (const char* name : {"rope_type", "type"}) {
    TSR_ASSIGN_OR_RETURN(std::string value, f.StringOr(name, ""));
    if (!value.empty()) {
      type = value;
      break;
    }
  }
  if (type.empty() || type == "default") {
    config->rope_scaling = RopeScaling();
    return OkStatus();
  }
  if (type != "llama3") {
    return UnimplementedError(fmt::format(
        "{}: {}.rope_type \"{}\" is not supported (supported: default, "
        "llama3)",
        source, key, type));
  }
  RopeScaling& r = config->rope_scaling;
  r.type = RopeScaling::Type::kLlama3;
  for (const char* name : {"factor", "low_freq_factor", "high_freq_factor",
                           "original_max_position_embeddings"}) {
    if (f.Find(name) == nullptr) {
      return InvalidArgumentError(
          fmt::format("{}: {} of type llama3 needs \"{}\"", source, key, name));
    }
  }
  TSR_ASSIGN_OR_RETURN(r.factor, f.DoubleOr("factor", 1));
  TSR_ASSIGN_OR_RETURN(r.low_freq_factor, f.DoubleOr("low_freq_factor", 1));
  TSR_ASSIGN_OR_RETURN(r.high_freq_factor, f.DoubleOr("high_freq_factor", 4));
  TSR_ASSIGN_OR_RETURN(r.original_max_position_embeddings,
                       f.IntOr("original_max_position_embeddings", 8192));
  if (!(r.factor > 0) || !(r.low_freq_factor > 0) ||
      !(r.high_freq_factor > r.low_freq_factor) ||
      r.original_max_position_embeddings <= 0) {
    return InvalidArgumentError(fmt::format(
        "{}: {} (llama3) needs factor > 0, 0 < low_freq_factor < "
        "high_freq_factor and original_max_position_embeddings > 0; found "
        "factor {}, low_freq_factor {}, high_freq_factor {}, "
        "original_max_position_embeddings {}",
        source, key, r.factor, r.low_freq_factor, r.high_freq_factor,
        r.original_max_position_embeddings));
  }
  return OkStatus();
}

}  // namespace

std::string_view ArchitectureClassName(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama:
      return "LlamaForCausalLM";
    case Architecture::kQwen2:
      return "Qwen2ForCausalLM";
    case Architecture::kQwen3:
      return "Qwen3ForCausalLM";
  }
  return "";
}

std::string_view ArchitectureModelType(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama:
      return "llama";
    case Architecture::kQwen2:
      return "qwen2";
    case Architecture::kQwen3:
      return "qwen3";
  }
  return "";
}

std::optional<Architecture> ParseArchitecture(std::string_view name) {
  for (Architecture arch : kAllArchitectures) {
    if (name == ArchitectureClassName(arch) ||
        name == ArchitectureModelType(arch)) {
      return arch;
    }
  }
  return std::nullopt;
}

std::string SupportedArchitecturesList() {
  std::vector<std::string_view> names;
  for (Architecture arch : kAllArchitectures) {
    names.push_back(ArchitectureClassName(arch));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

StatusOr<ModelConfig> ParseModelConfig(std::string_view json_text,
                                       std::string_view source) {
  auto parsed = ParseBoundedJson(json_text);
  if (!parsed.ok()) {
    return InvalidArgumentError(fmt::format("{}: malformed JSON: {}", source,
                                            parsed.status().message()));
  }
  Json root = std::move(*parsed);
  if (!root.is_object()) {
    return InvalidArgumentError(fmt::format(
        "{}: expected a JSON object, found {}", source, root.type_name()));
  }
  Fields f(root, source);
  ModelConfig c;

  // Architecture: architectures[0] (as Hugging Face does), else model_type.
  std::string arch_name;
  if (const Json* archs = f.Find("architectures")) {
    if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
      return f.Error(
          "architectures",
          fmt::format("must be a non-empty list of class names, found {}",
                      archs->dump()));
    }
    arch_name = (*archs)[0].get<std::string>();
  } else {
    TSR_ASSIGN_OR_RETURN(arch_name, f.StringOr("model_type", ""));
    if (arch_name.empty()) {
      return InvalidArgumentError(fmt::format(
          "{}: neither \"architectures\" nor \"model_type\" is set; "
          "supported architectures: {}",
          source, SupportedArchitecturesList()));
    }
  }
  std::optional<Architecture> arch = ParseArchitecture(arch_name);
  if (!arch) {
    return UnimplementedError(
        fmt::format("{}: architecture \"{}\" is not supported; supported "
                    "architectures: {}",
                    source, arch_name, SupportedArchitecturesList()));
  }
  c.architecture = *arch;
  const bool is_llama = c.architecture == Architecture::kLlama;
  const bool is_qwen2 = c.architecture == Architecture::kQwen2;
  const bool is_qwen3 = c.architecture == Architecture::kQwen3;

  TSR_ASSIGN_OR_RETURN(c.hidden_size, f.RequiredInt("hidden_size"));
  TSR_ASSIGN_OR_RETURN(c.intermediate_size, f.RequiredInt("intermediate_size"));
  TSR_ASSIGN_OR_RETURN(c.num_hidden_layers, f.RequiredInt("num_hidden_layers"));
  TSR_ASSIGN_OR_RETURN(c.num_attention_heads,
                       f.RequiredInt("num_attention_heads"));
  TSR_ASSIGN_OR_RETURN(c.vocab_size, f.RequiredInt("vocab_size"));
  for (auto [key, value] : {std::pair{"hidden_size", c.hidden_size},
                            {"intermediate_size", c.intermediate_size},
                            {"num_hidden_layers", c.num_hidden_layers},
                            {"num_attention_heads", c.num_attention_heads},
                            {"vocab_size", c.vocab_size}}) {
    if (value <= 0)
      return f.Error(key, fmt::format("must be > 0, is {}", value));
  }
  // Beyond any real model by orders of magnitude: a corrupt or hostile file,
  // refused before anything is sized from it.
  for (auto [key, value, limit] :
       {std::tuple{"hidden_size", c.hidden_size, int64_t{1} << 17},
        {"intermediate_size", c.intermediate_size, int64_t{1} << 20},
        {"num_hidden_layers", c.num_hidden_layers, int64_t{4096}},
        {"num_attention_heads", c.num_attention_heads, int64_t{4096}},
        {"vocab_size", c.vocab_size, int64_t{1} << 24}}) {
    if (value > limit) {
      return f.Error(key, fmt::format("is {}, beyond any real model (the "
                                      "limit is {}); the file is corrupt",
                                      value, limit));
    }
  }
  TSR_ASSIGN_OR_RETURN(c.num_key_value_heads,
                       f.IntOr("num_key_value_heads", c.num_attention_heads));
  if (c.num_key_value_heads <= 0 ||
      c.num_attention_heads % c.num_key_value_heads != 0) {
    return f.Error(
        "num_key_value_heads",
        fmt::format("is {}; it must be > 0 and divide num_attention_heads ({})",
                    c.num_key_value_heads, c.num_attention_heads));
  }
  int64_t default_head_dim =
      is_qwen3 ? 128 : c.hidden_size / c.num_attention_heads;
  TSR_ASSIGN_OR_RETURN(c.head_dim, f.IntOr("head_dim", default_head_dim));
  if (c.head_dim <= 0 || c.head_dim % 2 != 0 || c.head_dim > 4096) {
    return f.Error(
        "head_dim",
        fmt::format(
            "is {}; rope needs a positive even head_dim (hidden_size {} / "
            "num_attention_heads {})",
            c.head_dim, c.hidden_size, c.num_attention_heads));
  }
  TSR_ASSIGN_OR_RETURN(
      c.max_position_embeddings,
      f.IntOr("max_position_embeddings", is_llama ? 2048 : 32768));
  if (c.max_position_embeddings <= 0) {
    return f.Error("max_position_embeddings", "must be > 0");
  }
  TSR_ASSIGN_OR_RETURN(c.rms_norm_eps, f.DoubleOr("rms_norm_eps", 1e-6));
  if (!(c.rms_norm_eps > 0)) return f.Error("rms_norm_eps", "must be > 0");
  TSR_ASSIGN_OR_RETURN(c.rope_theta, f.DoubleOr("rope_theta", 10000.0));

  // rope_scaling (transformers <= 4.x) or rope_parameters (newer files,
  // which also carry rope_theta inside).
  if (const Json* params = f.Find("rope_parameters")) {
    TSR_RETURN_IF_ERROR(
        ParseRopeScaling(*params, "rope_parameters", source, &c));
    if (params->contains("rope_theta")) {
      TSR_ASSIGN_OR_RETURN(c.rope_theta,
                           Fields(*params, source).DoubleOr("rope_theta", 0));
    }
  } else if (const Json* scaling = f.Find("rope_scaling")) {
    TSR_RETURN_IF_ERROR(ParseRopeScaling(*scaling, "rope_scaling", source, &c));
  }
  if (!(c.rope_theta > 0)) return f.Error("rope_theta", "must be > 0");

  TSR_ASSIGN_OR_RETURN(c.tie_word_embeddings,
                       f.BoolOr("tie_word_embeddings", false));
  TSR_ASSIGN_OR_RETURN(c.attention_bias, f.BoolOr("attention_bias", is_qwen2));
  TSR_ASSIGN_OR_RETURN(c.torch_dtype, f.StringOr("torch_dtype", ""));
  if (c.torch_dtype.empty()) {
    TSR_ASSIGN_OR_RETURN(c.torch_dtype, f.StringOr("dtype", ""));
  }
  TSR_ASSIGN_OR_RETURN(std::optional<int64_t> bos, f.Int("bos_token_id"));
  if (bos) c.bos_token_id = static_cast<int32_t>(*bos);
  TSR_ASSIGN_OR_RETURN(c.eos_token_ids, f.IntList("eos_token_id"));

  TSR_ASSIGN_OR_RETURN(c.hidden_act, f.StringOr("hidden_act", "silu"));
  if (c.hidden_act != "silu") {
    return UnimplementedError(
        fmt::format("{}: hidden_act \"{}\" is not supported (supported: silu)",
                    source, c.hidden_act));
  }
  TSR_ASSIGN_OR_RETURN(bool mlp_bias, f.BoolOr("mlp_bias", false));
  if (mlp_bias) {
    return UnimplementedError(fmt::format(
        "{}: \"mlp_bias\": true is not supported (MLP projections without "
        "bias only)",
        source));
  }
  TSR_ASSIGN_OR_RETURN(bool sliding, f.BoolOr("use_sliding_window", false));
  if (sliding) {
    return UnimplementedError(fmt::format(
        "{}: \"use_sliding_window\": true is not supported (full attention "
        "only)",
        source));
  }
  if (f.Find("quantization_config") != nullptr) {
    return UnimplementedError(fmt::format(
        "{}: \"quantization_config\" is set; quantized checkpoints are not "
        "supported (use an F32, F16 or BF16 checkpoint)",
        source));
  }
  return c;
}

StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return NotFoundError(fmt::format("{}: file not found", path));
  }
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgumentError(
        fmt::format("{}: is a directory, expected a file", path));
  }
  TSR_RETURN_IF_ERROR(CheckRegularFile(path, kMaxTextFileBytes, "the file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InternalError(
        fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return InternalError(fmt::format("{}: read failed", path));
  }
  return text.str();
}

StatusOr<ModelConfig> LoadModelConfig(const std::string& path) {
  TSR_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseModelConfig(text, path);
}

std::string ModelConfigToJson(const ModelConfig& c) {
  OrderedJson j;
  j["architectures"] = {ArchitectureClassName(c.architecture)};
  j["attention_bias"] = c.attention_bias;
  j["attention_dropout"] = 0.0;
  j["bos_token_id"] =
      c.bos_token_id ? OrderedJson(*c.bos_token_id) : OrderedJson(nullptr);
  if (c.eos_token_ids.size() == 1) {
    j["eos_token_id"] = c.eos_token_ids[0];
  } else if (c.eos_token_ids.empty()) {
    j["eos_token_id"] = nullptr;
  } else {
    j["eos_token_id"] = c.eos_token_ids;
  }
  j["head_dim"] = c.head_dim;
  j["hidden_act"] = c.hidden_act;
  j["hidden_size"] = c.hidden_size;
  j["initializer_range"] = 0.02;
  j["intermediate_size"] = c.intermediate_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  if (c.architecture == Architecture::kLlama) {
    j["mlp_bias"] = false;
  } else {
    j["max_window_layers"] = c.num_hidden_layers;
  }
  j["model_type"] = ArchitectureModelType(c.architecture);
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["rms_norm_eps"] = c.rms_norm_eps;
  if (c.rope_scaling.type == RopeScaling::Type::kLlama3) {
    const RopeScaling& r = c.rope_scaling;
    j["rope_scaling"] = {{"factor", r.factor},
                         {"high_freq_factor", r.high_freq_factor},
                         {"low_freq_factor", r.low_freq_factor},
                         {"original_max_position_embeddings",
                          r.original_max_position_embeddings},
                         {"rope_type", "llama3"}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["rope_theta"] = c.rope_theta;
  if (c.architecture != Architecture::kLlama) {
    j["sliding_window"] = nullptr;
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j["torch_dtype"] = c.torch_dtype;
  j["use_cache"] = true;
  if (c.architecture != Architecture::kLlama) {
    j["use_sliding_window"] = false;
  }
  j["vocab_size"] = c.vocab_size;
  return j.dump(2) + "\n";
}

}  // namespace tessera::model
