// Prompt preparation, shared by the HTTP server and the CLI (`tessera
// tokenize`, `detokenize`, `generate`, `serve`): a model directory's
// tokenizer and chat template, and the JSON bodies of /tokenize and
// /detokenize (the CLI's --request takes the same bodies).
//
// Tokenize request, exactly one of:
//   {"prompt": "text", "add_special_tokens": true}
//   {"messages": [...], "tools": [...] | null, "add_generation_prompt": true,
//    "chat_template_kwargs": {...} | null, "add_special_tokens": false}
// add_special_tokens defaults to true for "prompt" (the tokenizer's
// post-processor decides what that adds, e.g. Llama's BOS) and to false for
// "messages" (the template writes the special tokens itself);
// add_generation_prompt defaults to true. "model" is accepted and ignored
// (servers take it); any other key is an error, so a misspelt option is not
// silently dropped.
// Detokenize request: {"tokens": [int, ...], "skip_special_tokens": true}.
//
// Every error is a Status whose message says what is wrong and what to do;
// codes: InvalidArgument (malformed or mistyped request, template failure),
// NotFound (missing directory, file or chat template).
//
// Thread-safety: PromptTools is immutable after Load apart from the lazily
// loaded chat template, whose loading is serialised by a mutex: every method
// may be called from several threads (the server's handlers do).
#ifndef TESSERA_PROMPT_PROMPT_TOOLS_H_
#define TESSERA_PROMPT_PROMPT_TOOLS_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace tessera::prompt {

struct TokenizeRequest {
  std::optional<std::string> prompt;  // set: plain text; else messages
  nlohmann::ordered_json messages;    // array
  nlohmann::ordered_json tools;       // null or array
  nlohmann::ordered_json chat_template_kwargs;  // null or object
  bool add_generation_prompt = true;
  bool add_special_tokens = true;  // defaulted by the request's kind
};

StatusOr<TokenizeRequest> ParseTokenizeRequest(
    const nlohmann::ordered_json& body);

struct DetokenizeRequest {
  std::vector<int32_t> tokens;
  bool skip_special_tokens = true;
};

StatusOr<DetokenizeRequest> ParseDetokenizeRequest(
    const nlohmann::ordered_json& body);

// The answers, the same from POST /tokenize and /detokenize as from
// `tessera tokenize` and `tessera detokenize` (one JSON line each):
//   {"tokens": [...], "count": N, "prompt": "<the text tokenized>"}
//   {"text": "..."}
nlohmann::ordered_json TokenizeResponseJson(const std::vector<int32_t>& tokens,
                                            const std::string& prompt_text);
nlohmann::ordered_json DetokenizeResponseJson(const std::string& text);

// A prompt ready for the model: its text (the rendered chat for messages)
// and its token ids.
struct PreparedPrompt {
  std::string text;
  std::vector<int32_t> ids;
};

// The tokenizer of a model directory and, loaded on first use, its chat
// template (the directory's tokenizer_config.json / chat_template.jinja, or
// an override file).
class PromptTools {
 public:
  // `model_dir` must hold tokenizer.json; config.json and weights are not
  // needed. It may instead name a GGUF file: the tokenizer and chat
  // template are then the ones its metadata carries
  // (gguf/gguf_tokenizer.h). `chat_template_file` (may be empty) replaces
  // the model's template: a Jinja file, or a .json file shaped like
  // tokenizer_config.json.
  static StatusOr<std::unique_ptr<PromptTools>> Load(
      const std::string& model_dir, const std::string& chat_template_file);

  const Tokenizer& tokenizer() const { return *tokenizer_; }

  // Renders `messages` through the chat template.
  StatusOr<std::string> RenderChat(const nlohmann::ordered_json& messages,
                                   const nlohmann::ordered_json& tools,
                                   bool add_generation_prompt,
                                   const nlohmann::ordered_json& kwargs);

  // The prompt a tokenize request describes.
  StatusOr<PreparedPrompt> Prepare(const TokenizeRequest& request);

  // InvalidArgument naming the first id outside [0, vocab_size).
  Status CheckTokenIds(const std::vector<int32_t>& ids) const;

 private:
  PromptTools() = default;
  StatusOr<const ChatTemplate*> Template();

  std::string model_dir_;
  std::string chat_template_file_;
  bool gguf_ = false;  // model_dir_ is a GGUF file
  std::optional<std::string> gguf_chat_template_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::mutex template_mu_;  // guards loading chat_template_
  std::optional<ChatTemplate> chat_template_;
};

// Checks `model_dir` is an existing directory or GGUF file; NotFound or
// InvalidArgument saying what to pass otherwise.
Status CheckModelDir(const std::string& model_dir);

}  // namespace tessera::prompt

#endif  // TESSERA_PROMPT_PROMPT_TOOLS_H_
