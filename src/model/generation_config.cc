#include "model/generation_config.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "model/model_config.h"

namespace tessera::model {
namespace {

using Json = nlohmann::json;

Status TypeError(std::string_view source, std::string_view key,
                 std::string_view expected, const Json& found) {
  return InvalidArgumentError(fmt::format("{}: \"{}\" must be {}, found {}",
                                          source, key, expected, found.dump()));
}

StatusOr<int64_t> AsInt(const Json& j, std::string_view source,
                        std::string_view key) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_number_float()) {
    double d = j.get<double>();
    // Whole and exactly representable (beyond 2^53 a double is not a
    // token id anyway, and converting one past 2^63 is undefined).
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) {
      return int64_t(d);
    }
  }
  return TypeError(source, key, "an integer", j);
}

}  // namespace

StatusOr<GenerationConfig> ParseGenerationConfig(std::string_view json_text,
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
  GenerationConfig g;
  for (const auto& [key, value] : root.items()) {
    if (value.is_null()) continue;
    bool known = true;
    if (key == "do_sample") {
      if (!value.is_boolean())
        return TypeError(source, key, "a boolean", value);
      g.do_sample = value.get<bool>();
    } else if (key == "temperature" || key == "top_p" || key == "min_p" ||
               key == "repetition_penalty") {
      if (!value.is_number()) return TypeError(source, key, "a number", value);
      double v = value.get<double>();
      double* field = key == "temperature" ? &g.temperature
                      : key == "top_p"     ? &g.top_p
                      : key == "min_p"     ? &g.min_p
                                           : &g.repetition_penalty;
      *field = v;
    } else if (key == "top_k" || key == "max_new_tokens") {
      TSR_ASSIGN_OR_RETURN(int64_t v, AsInt(value, source, key));
      (key == "top_k" ? g.top_k : g.max_new_tokens) = v;
    } else if (key == "eos_token_id") {
      if (value.is_array()) {
        for (const Json& item : value) {
          TSR_ASSIGN_OR_RETURN(int64_t v, AsInt(item, source, key));
          g.eos_token_ids.push_back(int32_t(v));
        }
      } else {
        TSR_ASSIGN_OR_RETURN(int64_t v, AsInt(value, source, key));
        g.eos_token_ids.push_back(int32_t(v));
      }
    } else if (key == "bos_token_id" || key == "pad_token_id") {
      TSR_ASSIGN_OR_RETURN(int64_t v, AsInt(value, source, key));
      (key == "bos_token_id" ? g.bos_token_id : g.pad_token_id) = int32_t(v);
    } else {
      known = false;
    }
    if (known) g.present.insert(key);
  }
  auto range_error = [&](std::string_view key, double v,
                         std::string_view rule) {
    return InvalidArgumentError(
        fmt::format("{}: \"{}\" is {}; it must be {}", source, key, v, rule));
  };
  if (!(g.temperature >= 0)) {
    return range_error("temperature", g.temperature, ">= 0");
  }
  if (!(g.top_p > 0 && g.top_p <= 1)) {
    return range_error("top_p", g.top_p, "in (0, 1]");
  }
  if (!(g.min_p >= 0 && g.min_p <= 1)) {
    return range_error("min_p", g.min_p, "in [0, 1]");
  }
  if (!(g.repetition_penalty > 0)) {
    return range_error("repetition_penalty", g.repetition_penalty, "> 0");
  }
  if (g.top_k < 0) return range_error("top_k", double(g.top_k), ">= 0");
  if (g.max_new_tokens < 0) {
    return range_error("max_new_tokens", double(g.max_new_tokens), ">= 0");
  }
  return g;
}

StatusOr<GenerationConfig> LoadGenerationConfig(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return GenerationConfig();
  TSR_ASSIGN_OR_RETURN(std::string text, ReadTextFile(path));
  return ParseGenerationConfig(text, path);
}

std::string GenerationConfigToJson(const GenerationConfig& g) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (g.Has("bos_token_id") && g.bos_token_id)
    j["bos_token_id"] = *g.bos_token_id;
  if (g.Has("do_sample")) j["do_sample"] = g.do_sample;
  if (g.Has("eos_token_id")) {
    if (g.eos_token_ids.size() == 1) {
      j["eos_token_id"] = g.eos_token_ids[0];
    } else {
      j["eos_token_id"] = g.eos_token_ids;
    }
  }
  if (g.Has("max_new_tokens")) j["max_new_tokens"] = g.max_new_tokens;
  if (g.Has("min_p")) j["min_p"] = g.min_p;
  if (g.Has("pad_token_id") && g.pad_token_id)
    j["pad_token_id"] = *g.pad_token_id;
  if (g.Has("repetition_penalty"))
    j["repetition_penalty"] = g.repetition_penalty;
  if (g.Has("temperature")) j["temperature"] = g.temperature;
  if (g.Has("top_k")) j["top_k"] = g.top_k;
  if (g.Has("top_p")) j["top_p"] = g.top_p;
  return j.dump(2) + "\n";
}

}  // namespace tessera::model
