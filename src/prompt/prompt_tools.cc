#include "prompt/prompt_tools.h"

#include <fmt/format.h>

#include <filesystem>
#include <limits>

#include "base/bounded_json.h"
#include "base/file_checks.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_tokenizer.h"

namespace tessera::prompt {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;


const char* JsonTypeName(const Json& value) {
  if (value.is_number_integer()) return "an integer";
  if (value.is_number()) return "a number";
  return value.type_name();
}

Status WrongType(const std::string& key, const char* expected,
                 const Json& got) {
  return InvalidArgumentError(
      fmt::format("request field \"{}\" must be {}, not {}", key, expected,
                  JsonTypeName(got)));
}

// Reads an optional boolean field into `out`.
Status OptionalBool(const Json& body, const char* key, bool* out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return OkStatus();
  if (!it->is_boolean()) return WrongType(key, "true or false", *it);
  *out = it->get<bool>();
  return OkStatus();
}

Status CheckKeys(const Json& body, std::initializer_list<const char*> allowed,
                 const char* kind) {
  for (const auto& [key, value] : body.items()) {
    bool known = key == "model";
    for (const char* a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) {
        list += (list.empty() ? "" : ", ") + std::string(a);
      }
      return InvalidArgumentError(fmt::format(
          "unknown field \"{}\" in the {} request; the fields are: {}", key,
          kind, list));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<TokenizeRequest> ParseTokenizeRequest(const Json& body) {
  if (!body.is_object()) {
    return InvalidArgumentError(fmt::format(
        "the tokenize request must be a JSON object such as "
        "{{\"prompt\": \"text\"}} or {{\"messages\": [...]}}, not {}",
        JsonTypeName(body)));
  }
  TSR_RETURN_IF_ERROR(
      CheckKeys(body,
                {"prompt", "messages", "tools", "add_generation_prompt",
                 "chat_template_kwargs", "add_special_tokens"},
                "tokenize"));
  const bool has_prompt = body.contains("prompt");
  const bool has_messages = body.contains("messages");
  if (has_prompt == has_messages) {
    return InvalidArgumentError(
        has_prompt ? "the tokenize request has both \"prompt\" and "
                     "\"messages\"; give exactly one"
                   : "the tokenize request needs \"prompt\" (text) or "
                     "\"messages\" (a chat)");
  }
  TokenizeRequest request;
  if (has_prompt) {
    const Json& prompt = body["prompt"];
    if (!prompt.is_string()) return WrongType("prompt", "a string", prompt);
    for (const char* chat_only :
         {"tools", "add_generation_prompt", "chat_template_kwargs"}) {
      if (body.contains(chat_only)) {
        return InvalidArgumentError(fmt::format(
            "\"{}\" only applies to \"messages\" requests, not \"prompt\"",
            chat_only));
      }
    }
    request.prompt = prompt.get<std::string>();
    request.add_special_tokens = true;
  } else {
    const Json& messages = body["messages"];
    if (!messages.is_array()) {
      return WrongType("messages", "an array of message objects", messages);
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      const Json& m = messages[i];
      if (!m.is_object()) {
        return InvalidArgumentError(fmt::format(
            "messages[{}] must be an object like {{\"role\": \"user\", "
            "\"content\": \"...\"}}, not {}",
            i, JsonTypeName(m)));
      }
      if (!m.contains("role") || !m["role"].is_string()) {
        return InvalidArgumentError(
            fmt::format("messages[{}] needs a string \"role\"", i));
      }
    }
    request.messages = messages;
    if (auto it = body.find("tools"); it != body.end() && !it->is_null()) {
      if (!it->is_array()) return WrongType("tools", "an array", *it);
      request.tools = *it;
    }
    if (auto it = body.find("chat_template_kwargs");
        it != body.end() && !it->is_null()) {
      if (!it->is_object()) {
        return WrongType("chat_template_kwargs", "an object", *it);
      }
      request.chat_template_kwargs = *it;
    }
    TSR_RETURN_IF_ERROR(OptionalBool(body, "add_generation_prompt",
                                     &request.add_generation_prompt));
    request.add_special_tokens = false;
  }
  TSR_RETURN_IF_ERROR(
      OptionalBool(body, "add_special_tokens", &request.add_special_tokens));
  return request;
}

Json TokenizeResponseJson(const std::vector<int32_t>& tokens,
                          const std::string& prompt_text) {
  return Json{
      {"tokens", tokens}, {"count", tokens.size()}, {"prompt", prompt_text}};
}

Json DetokenizeResponseJson(const std::string& text) {
  return Json{{"text", text}};
}

StatusOr<DetokenizeRequest> ParseDetokenizeRequest(const Json& body) {
  if (!body.is_object()) {
    return InvalidArgumentError(
        fmt::format("the detokenize request must be a JSON object such as "
                    "{{\"tokens\": [1, 2, 3]}}, not {}",
                    JsonTypeName(body)));
  }
  TSR_RETURN_IF_ERROR(
      CheckKeys(body, {"tokens", "skip_special_tokens"}, "detokenize"));
  auto it = body.find("tokens");
  if (it == body.end()) {
    return InvalidArgumentError(
        "the detokenize request needs \"tokens\": an array of token ids");
  }
  if (!it->is_array()) return WrongType("tokens", "an array of integers", *it);
  DetokenizeRequest request;
  request.tokens.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& id = (*it)[i];
    if (!id.is_number_integer()) {
      return InvalidArgumentError(
          fmt::format("tokens[{}] must be an integer token id, not {}", i,
                      JsonTypeName(id)));
    }
    const int64_t value = id.get<int64_t>();
    if (id.is_number_unsigned() &&
        id.get<uint64_t>() > uint64_t(std::numeric_limits<int32_t>::max())) {
      return InvalidArgumentError(
          fmt::format("tokens[{}] = {} is not a token id", i, id.dump()));
    }
    if (value < 0 || value > std::numeric_limits<int32_t>::max()) {
      return InvalidArgumentError(
          fmt::format("tokens[{}] = {} is not a token id", i, value));
    }
    request.tokens.push_back(static_cast<int32_t>(value));
  }
  TSR_RETURN_IF_ERROR(
      OptionalBool(body, "skip_special_tokens", &request.skip_special_tokens));
  return request;
}

Status CheckModelDir(const std::string& model_dir) {
  std::error_code ec;
  if (model_dir.empty()) {
    return InvalidArgumentError(
        "--model-path is empty; pass the folder of a Hugging Face model or "
        "a GGUF file");
  }
  if (!fs::exists(model_dir, ec)) {
    return NotFoundError(fmt::format(
        "model directory {} does not exist; pass --model-path DIR, the "
        "folder of a Hugging Face model (tokenizer.json, config.json, "
        "*.safetensors)",
        model_dir));
  }
  if (!fs::is_directory(model_dir, ec) && !gguf::IsGgufFile(model_dir)) {
    return InvalidArgumentError(fmt::format(
        "--model-path {} is neither a directory nor a GGUF file; pass the "
        "folder that holds tokenizer.json, or a .gguf file",
        model_dir));
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<PromptTools>> PromptTools::Load(
    const std::string& model_dir, const std::string& chat_template_file) {
  TSR_RETURN_IF_ERROR(CheckModelDir(model_dir));
  std::error_code ec;
  if (gguf::IsGgufFile(model_dir)) {
    auto tools = std::unique_ptr<PromptTools>(new PromptTools());
    tools->model_dir_ = model_dir;
    tools->chat_template_file_ = chat_template_file;
    tools->gguf_ = true;
    TSR_ASSIGN_OR_RETURN(auto file, gguf::GgufFile::Open(model_dir));
    TSR_ASSIGN_OR_RETURN(gguf::GgufTokenizerFiles files,
                         gguf::TokenizerFilesFromGguf(*file));
    TSR_ASSIGN_OR_RETURN(
        tools->tokenizer_,
        Tokenizer::FromJsonText(files.tokenizer_json,
                                files.tokenizer_config_json,
                                fmt::format("the tokenizer in {}", model_dir)));
    tools->gguf_chat_template_ = std::move(files.chat_template);
    if (!chat_template_file.empty()) {
      TSR_RETURN_IF_ERROR(tools->Template().status());
    }
    return tools;
  }
  if (!fs::exists(fs::path(model_dir) / "tokenizer.json", ec)) {
    return NotFoundError(fmt::format(
        "{} has no tokenizer.json; Tessera reads Hugging Face fast-tokenizer "
        "files (tokenizer.json, tokenizer_config.json)",
        model_dir));
  }
  auto tools = std::unique_ptr<PromptTools>(new PromptTools());
  tools->model_dir_ = model_dir;
  tools->chat_template_file_ = chat_template_file;
  TSR_ASSIGN_OR_RETURN(tools->tokenizer_, Tokenizer::Load(model_dir));
  if (!chat_template_file.empty()) {
    // An explicit override is checked at once: a typo in the path should
    // fail even for requests that never render a chat.
    TSR_RETURN_IF_ERROR(tools->Template().status());
  }
  return tools;
}

StatusOr<const ChatTemplate*> PromptTools::Template() {
  std::lock_guard<std::mutex> lock(template_mu_);
  if (chat_template_) return &*chat_template_;
  if (!chat_template_file_.empty()) {
    if (fs::path(chat_template_file_).extension() == ".json") {
      auto loaded = ChatTemplate::FromTokenizerConfig(chat_template_file_);
      if (!loaded.ok()) {
        return loaded.status().WithContext("--chat-template");
      }
      chat_template_ = std::move(loaded).value();
    } else {
      TSR_ASSIGN_OR_RETURN(
          std::string source,
          ReadTextFile(chat_template_file_, "--chat-template file"));
      auto loaded = ChatTemplate::FromString(source, tokenizer_->bos_token(),
                                             tokenizer_->eos_token());
      if (!loaded.ok()) {
        return loaded.status().WithContext(chat_template_file_);
      }
      chat_template_ = std::move(loaded).value();
    }
    return &*chat_template_;
  }
  if (gguf_) {
    if (!gguf_chat_template_) {
      return NotFoundError(fmt::format(
          "{} carries no tokenizer.chat_template, so no chat template; pass "
          "--chat-template FILE or use a plain prompt",
          model_dir_));
    }
    auto loaded = ChatTemplate::FromString(*gguf_chat_template_,
                                           tokenizer_->bos_token(),
                                           tokenizer_->eos_token());
    if (!loaded.ok()) {
      return loaded.status().WithContext(
          fmt::format("tokenizer.chat_template of {}", model_dir_));
    }
    chat_template_ = std::move(loaded).value();
    return &*chat_template_;
  }
  const std::string config =
      (fs::path(model_dir_) / "tokenizer_config.json").string();
  std::error_code ec;
  if (!fs::exists(config, ec) &&
      !fs::exists(fs::path(model_dir_) / "chat_template.jinja", ec)) {
    return NotFoundError(fmt::format(
        "{} has no tokenizer_config.json, so no chat template; pass "
        "--chat-template FILE or use a plain prompt",
        model_dir_));
  }
  if (!fs::exists(config, ec)) {
    // chat_template.jinja alone: FromTokenizerConfig needs the config file.
    TSR_ASSIGN_OR_RETURN(
        std::string source,
        ReadTextFile((fs::path(model_dir_) / "chat_template.jinja").string(),
                      "chat template"));
    TSR_ASSIGN_OR_RETURN(
        ChatTemplate loaded,
        ChatTemplate::FromString(source, tokenizer_->bos_token(),
                                 tokenizer_->eos_token()));
    chat_template_ = std::move(loaded);
    return &*chat_template_;
  }
  auto loaded = ChatTemplate::FromTokenizerConfig(config);
  if (!loaded.ok()) {
    if (loaded.status().code() == StatusCode::kNotFound) {
      return NotFoundError(loaded.status().message() +
                           " with --chat-template FILE");
    }
    return loaded.status();
  }
  chat_template_ = std::move(loaded).value();
  return &*chat_template_;
}

StatusOr<std::string> PromptTools::RenderChat(const Json& messages,
                                              const Json& tools,
                                              bool add_generation_prompt,
                                              const Json& kwargs) {
  TSR_ASSIGN_OR_RETURN(const ChatTemplate* chat_template, Template());
  auto rendered =
      chat_template->Render(messages, tools, add_generation_prompt, kwargs);
  if (!rendered.ok()) {
    return InvalidArgumentError(rendered.status().message());
  }
  return rendered;
}

StatusOr<PreparedPrompt> PromptTools::Prepare(const TokenizeRequest& request) {
  PreparedPrompt out;
  if (request.prompt) {
    out.text = *request.prompt;
  } else {
    TSR_ASSIGN_OR_RETURN(out.text, RenderChat(request.messages, request.tools,
                                              request.add_generation_prompt,
                                              request.chat_template_kwargs));
  }
  out.ids = tokenizer_->Encode(out.text, request.add_special_tokens);
  return out;
}

Status PromptTools::CheckTokenIds(const std::vector<int32_t>& ids) const {
  const int32_t vocab = tokenizer_->vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return InvalidArgumentError(fmt::format(
          "token id {} (at index {}) is outside the tokenizer's vocabulary "
          "[0, {})",
          ids[i], i, vocab));
    }
  }
  return OkStatus();
}

}  // namespace tessera::prompt
