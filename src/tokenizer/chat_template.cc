#include "tokenizer/chat_template.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/bounded_json.h"
#include "base/file_checks.h"

namespace tessera {
namespace {

StatusOr<std::string> ReadFile(const std::string& path) {
  TSR_RETURN_IF_ERROR(
      CheckRegularFile(path, kMaxTextFileBytes, "the chat template file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(fmt::format("cannot open {}", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A special token in tokenizer_config.json: a string, null, or an AddedToken
// object {"content": ...}. Empty when absent.
std::string TokenText(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return "";
}

// Hugging Face's special_tokens_map order.
constexpr const char* kSpecialTokenKeys[] = {
    "bos_token", "eos_token", "unk_token", "sep_token",
    "pad_token", "cls_token", "mask_token"};

}  // namespace

StatusOr<ChatTemplate> ChatTemplate::FromTokenizerConfig(
    const std::string& path) {
  TSR_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  auto parsed = ParseBoundedOrderedJson(text);
  if (!parsed.ok() || !parsed->is_object()) {
    return InvalidArgumentError(fmt::format(
        "{} is not a JSON object{}; expected a Hugging Face "
        "tokenizer_config.json",
        path, parsed.ok() ? "" : " (" + parsed.status().message() + ")"));
  }
  const nlohmann::ordered_json config = std::move(*parsed);
  // name -> source, in file order.
  std::vector<std::pair<std::string, std::string>> sources;
  const std::filesystem::path jinja_file =
      std::filesystem::path(path).parent_path() / "chat_template.jinja";
  if (std::filesystem::exists(jinja_file)) {
    TSR_ASSIGN_OR_RETURN(std::string source, ReadFile(jinja_file.string()));
    sources.emplace_back("default", std::move(source));
  } else if (config.contains("chat_template")) {
    const auto& ct = config["chat_template"];
    if (ct.is_string()) {
      sources.emplace_back("default", ct.get<std::string>());
    } else if (ct.is_array()) {
      for (const auto& entry : ct) {
        if (!entry.is_object() || !entry.contains("name") ||
            !entry.contains("template") || !entry["name"].is_string() ||
            !entry["template"].is_string()) {
          return InvalidArgumentError(fmt::format(
              "{}: each chat_template list entry must be {{\"name\": string, "
              "\"template\": string}}",
              path));
        }
        sources.emplace_back(entry["name"].get<std::string>(),
                             entry["template"].get<std::string>());
      }
    } else if (!ct.is_null()) {
      return InvalidArgumentError(fmt::format(
          "{}: chat_template must be a string or a list of named templates",
          path));
    }
  }
  if (sources.empty()) {
    return NotFoundError(fmt::format(
        "{} has no chat_template (and there is no chat_template.jinja beside "
        "it): the model is probably a base model; use plain completions or "
        "supply a chat template",
        path));
  }
  ChatTemplate out;
  for (auto& [name, source] : sources) {
    auto parsed = jinja::Template::Parse(source);
    if (!parsed.ok()) {
      return parsed.status().WithContext(
          fmt::format("chat template '{}' of {}", name, path));
    }
    out.templates_.emplace_back(name, std::move(parsed).value());
  }
  for (const char* key : kSpecialTokenKeys) {
    if (!config.contains(key)) continue;
    const std::string token = TokenText(config[key]);
    if (!token.empty()) out.special_tokens_.Set(key, jinja::Value(token));
  }
  if (config.contains("additional_special_tokens") &&
      config["additional_special_tokens"].is_array()) {
    jinja::ValueList extra;
    for (const auto& t : config["additional_special_tokens"]) {
      const std::string token = TokenText(t);
      if (!token.empty()) extra.emplace_back(token);
    }
    out.special_tokens_.Set("additional_special_tokens",
                            jinja::Value::List(std::move(extra)));
  }
  return out;
}

StatusOr<ChatTemplate> ChatTemplate::FromString(std::string_view source,
                                                std::string bos_token,
                                                std::string eos_token) {
  auto parsed = jinja::Template::Parse(source);
  if (!parsed.ok()) return parsed.status().WithContext("chat template");
  ChatTemplate out;
  out.templates_.emplace_back("default", std::move(parsed).value());
  if (!bos_token.empty()) {
    out.special_tokens_.Set("bos_token", jinja::Value(std::move(bos_token)));
  }
  if (!eos_token.empty()) {
    out.special_tokens_.Set("eos_token", jinja::Value(std::move(eos_token)));
  }
  return out;
}

std::vector<std::string> ChatTemplate::names() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : templates_) out.push_back(name);
  return out;
}

StatusOr<std::string> ChatTemplate::Render(
    const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
    bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const {
  if (!messages.is_array()) {
    return InvalidArgumentError("chat messages must be a JSON array");
  }
  if (!tools.is_null() && !tools.is_array()) {
    return InvalidArgumentError("chat tools must be null or a JSON array");
  }
  if (!kwargs.is_null() && !kwargs.is_object()) {
    return InvalidArgumentError(
        "chat template kwargs must be null or a JSON object");
  }
  // Hugging Face: a single template, or "tool_use" when tools are given and
  // it exists, else "default".
  using Entry = std::pair<std::string, jinja::Template>;
  auto find = [this](std::string_view name) -> const Entry* {
    for (const Entry& entry : templates_) {
      if (entry.first == name) return &entry;
    }
    return nullptr;
  };
  const Entry* chosen = templates_.size() == 1 ? &templates_.front() : nullptr;
  if (chosen == nullptr && !tools.is_null()) chosen = find("tool_use");
  if (chosen == nullptr) chosen = find("default");
  if (chosen == nullptr) {
    std::string names;
    for (const Entry& entry : templates_) {
      names += (names.empty() ? "'" : ", '") + entry.first + "'";
    }
    return InvalidArgumentError(fmt::format(
        "the tokenizer has several chat templates ({}) and none is named "
        "'default'",
        names));
  }

  jinja::ValueDict vars = special_tokens_;
  vars.Set("documents", jinja::Value::None());
  if (kwargs.is_object()) {
    for (const auto& [key, value] : kwargs.items()) {
      if (key == "messages" || key == "tools" ||
          key == "add_generation_prompt") {
        return InvalidArgumentError(fmt::format(
            "chat template kwarg '{}' clashes with the argument of the same "
            "name; pass it as that argument instead",
            key));
      }
      TSR_ASSIGN_OR_RETURN(jinja::Value v, jinja::Value::FromJson(value));
      vars.Set(key, std::move(v));
    }
  }
  TSR_ASSIGN_OR_RETURN(jinja::Value messages_value,
                       jinja::Value::FromJson(messages));
  TSR_ASSIGN_OR_RETURN(jinja::Value tools_value, jinja::Value::FromJson(tools));
  vars.Set("messages", std::move(messages_value));
  vars.Set("tools", std::move(tools_value));
  vars.Set("add_generation_prompt", jinja::Value(add_generation_prompt));
  auto rendered = chosen->second.Render(vars);
  if (!rendered.ok()) {
    return rendered.status().WithContext(
        fmt::format("rendering chat template '{}'", chosen->first));
  }
  return rendered;
}

}  // namespace tessera
