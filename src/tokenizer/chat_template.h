// ChatTemplate: turns an OpenAI-style conversation into a model's prompt text
// with the model's Jinja chat template, as Hugging Face's
// tokenizer.apply_chat_template(messages, tools=..., tokenize=False,
// add_generation_prompt=..., **kwargs) does.
//
// The template sees `messages`, `tools` (None when absent), `documents`
// (None unless a kwarg sets it), `add_generation_prompt`, the tokenizer's
// special tokens (`bos_token`, `eos_token`, ... — only those it has, as
// Hugging Face's special_tokens_map) and every kwarg (e.g. `enable_thinking`),
// kwargs overriding special tokens. Messages are passed through as given:
// `content` may be a string, null or a list of parts, and tool_calls'
// `function.arguments` a JSON string or an object; templates decide.
//
// Immutable after construction; Render may run from several threads at once.
#ifndef TESSERA_TOKENIZER_CHAT_TEMPLATE_H_
#define TESSERA_TOKENIZER_CHAT_TEMPLATE_H_

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/jinja/template.h"
#include "tokenizer/jinja/value.h"

namespace tessera {

class ChatTemplate {
 public:
  // Reads `chat_template` from a Hugging Face tokenizer_config.json: a string,
  // or a list of {"name", "template"} (Hugging Face picks "tool_use" when
  // tools are given and it exists, else "default"). A chat_template.jinja
  // beside the file replaces it, as in Hugging Face. Every template is parsed
  // here, so a template the engine cannot handle fails at load time where its
  // tags are concerned.
  static StatusOr<ChatTemplate> FromTokenizerConfig(const std::string& path);

  // A single template. An empty bos/eos token means the tokenizer has none:
  // the variable is then undefined, as in Hugging Face.
  static StatusOr<ChatTemplate> FromString(std::string_view source,
                                           std::string bos_token,
                                           std::string eos_token);

  // `messages`: a JSON array; `tools`: null or an array; `kwargs`: null or an
  // object of extra template variables (chat_template_kwargs).
  StatusOr<std::string> Render(const nlohmann::ordered_json& messages,
                               const nlohmann::ordered_json& tools,
                               bool add_generation_prompt,
                               const nlohmann::ordered_json& kwargs) const;

  // Names of the templates held ("default" for a single one).
  std::vector<std::string> names() const;

 private:
  ChatTemplate() = default;

  std::vector<std::pair<std::string, jinja::Template>> templates_;
  jinja::ValueDict special_tokens_;
};

}  // namespace tessera

#endif  // TESSERA_TOKENIZER_CHAT_TEMPLATE_H_
