// The request bodies of POST /v1/completions and POST /v1/chat/completions
// parsed into plain structs, with every field checked.
//
// Rules (the same for both endpoints):
// - A field that is absent or JSON null takes its default.
// - A wrong type or an out-of-range value is a 400 ApiError whose `param`
//   names the field and whose message says what is accepted.
// - A known OpenAI parameter Tessera does not implement (response_format
//   other than {"type": "text"}, suffix, best_of > n, functions,
//   function_call, audio, modalities other than ["text"], prediction,
//   web_search_options, non-text content parts) is a 400 with code
//   "unsupported_parameter", never silently ignored.
// - Structured output: OpenAI's response_format (json_object, json_schema)
//   and SGLang's regex / ebnf / json_schema; at most one per request. They
//   are read here (ConstraintSpec) and compiled by the route
//   (server/grammar_cache.h), so a bad schema is a 400 naming it.
// - Any other field the route does not know is a 400 naming it (one rule on
//   every route: a misspelt field never silently does nothing). OpenAI's
//   bookkeeping fields with no effect on generation (user, metadata,
//   service_tier, store: false) are known.
// Stateless; thread-safe.
#ifndef TESSERA_SERVER_OPENAI_REQUEST_H_
#define TESSERA_SERVER_OPENAI_REQUEST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"

namespace tessera::grammar {
class Grammar;
}

namespace tessera::server {

// Server-side bounds applied while parsing.
struct ProtocolLimits {
  int max_n = 16;             // most choices per request
  int max_top_logprobs = 20;  // OpenAI's bound on top_logprobs / logprobs
  int max_prompts = 64;       // most prompts in one request (a list)
};

// PD disaggregation (SGLang's request fields, set by the router):
// bootstrap_host, bootstrap_port (default 8998) and bootstrap_room.
struct BootstrapFields {
  std::string host;
  int32_t port = 8998;
  uint64_t room = 0;
};

// A structured-output constraint as the client wrote it.
struct ConstraintSpec {
  enum class Kind { kRegex, kEbnf, kJsonSchema, kJsonObject };
  Kind kind = Kind::kJsonObject;
  std::string text;   // the regex, the EBNF, or the schema as JSON text
  std::string param;  // the field it came from, for errors
};

// Sampling and stop settings shared by both endpoints (and /generate).
struct SamplingOptions {
  std::optional<int64_t> max_tokens;  // >= 1; nullopt: the server's default
  double temperature = 1.0;           // >= 0; 0 means greedy
  double top_p = 1.0;                 // (0, 1]
  int32_t top_k = -1;                 // -1 (off) or >= 1
  double min_p = 0.0;                 // [0, 1]
  double presence_penalty = 0.0;      // [-2, 2]
  double frequency_penalty = 0.0;     // [-2, 2]
  double repetition_penalty = 1.0;    // (0, 2]
  std::optional<int64_t> seed;
  std::vector<std::string> stop;        // strings that end a choice
  std::vector<int32_t> stop_token_ids;  // token ids that end a choice
  bool ignore_eos = false;
  int32_t n = 1;  // [1, ProtocolLimits::max_n]
  // token id -> bias added to its logit, each in [-100, 100].
  std::map<int32_t, float> logit_bias;
  // SGLang's extras. min_tokens: stop tokens are masked until this many
  // tokens were generated ([0, max_tokens]). no_stop_trim: a matched stop
  // string stays in the text. spaces_between_special_tokens is accepted
  // and, as in Hugging Face's fast tokenizers (the only kind Tessera
  // loads), has no effect on decoding.
  int32_t min_tokens = 0;
  bool skip_special_tokens = true;
  bool spaces_between_special_tokens = true;
  bool no_stop_trim = false;
  // Structured output: what the client asked for, and (set by the route
  // once compiled) the grammar the engine enforces.
  std::optional<ConstraintSpec> constraint;
  std::shared_ptr<const grammar::Grammar> grammar;
  // Top-level request fields, not sampling, carried here because every
  // endpoint turns these options into engine requests.
  std::optional<BootstrapFields> bootstrap;
};

// One prompt of a completions request: text, or token ids.
struct CompletionPrompt {
  bool is_token_ids = false;
  std::string text;                // when !is_token_ids
  std::vector<int32_t> token_ids;  // when is_token_ids; never empty
};

// max_tokens of /v1/completions when the request leaves it out (OpenAI's,
// SGLang's and vLLM's default). Chat completions default to the context.
inline constexpr int32_t kDefaultCompletionMaxTokens = 16;

struct CompletionRequest {
  std::optional<std::string> model;
  // "prompt" as a string, a token-id array, or a list of either: one entry
  // per prompt; never empty. Each prompt yields `sampling.n` choices.
  std::vector<CompletionPrompt> prompts;
  SamplingOptions sampling;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // Number of top alternatives per token; nullopt: no logprobs.
  std::optional<int32_t> logprobs;
  bool echo = false;
};

struct ToolCall {
  std::string id;
  std::string type = "function";
  std::string name;
  std::string arguments;  // JSON text, as OpenAI sends it
};

struct ChatMessage {
  std::string role;  // system | user | assistant | tool ("developer" → system)
  // Text; a list of text parts is joined with "\n". nullopt only for an
  // assistant message that carries tool_calls.
  std::optional<std::string> content;
  std::optional<std::string> name;
  std::vector<ToolCall> tool_calls;              // assistant only
  std::optional<std::string> tool_call_id;       // tool only (required there)
  std::optional<std::string> reasoning_content;  // assistant only
};

struct ChatRequest {
  std::optional<std::string> model;
  std::vector<ChatMessage> messages;  // never empty
  Json tools;        // null or a validated array of function tools
  Json tool_choice;  // null, "none" | "auto" | "required", or
                     // {"type": "function", "function": {"name": ...}}
  bool parallel_tool_calls = true;
  SamplingOptions sampling;
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  int32_t top_logprobs = 0;        // [0, max_top_logprobs]; needs logprobs
  Json chat_template_kwargs;       // null or object
  bool separate_reasoning = true;  // split <think> text into reasoning_content
};

// A 400 on `param` when a list of `count` prompts exceeds
// limits.max_prompts.
MaybeApiError CheckPromptCount(size_t count, const ProtocolLimits& limits,
                               const std::string& param);

// body[field] as prompts: a string, an array of token ids, or a list of
// either (at most limits.max_prompts); /v1/completions' "prompt" and
// /v1/embeddings' "input".
MaybeApiError ParsePromptList(const Json& body, const std::string& field,
                              const ProtocolLimits& limits,
                              std::vector<CompletionPrompt>* out);

// Parses a /v1/completions body.
MaybeApiError ParseCompletionRequest(const Json& body,
                                     const ProtocolLimits& limits,
                                     CompletionRequest* out);

// Parses a /v1/chat/completions body.
MaybeApiError ParseChatRequest(const Json& body, const ProtocolLimits& limits,
                               ChatRequest* out);

// The messages as the chat template expects them: [{"role", "content",
// "name"?, "tool_calls"? [{"id", "type", "function": {"name",
// "arguments"}}], "tool_call_id"?, "reasoning_content"?}].
Json ChatMessagesToJson(const std::vector<ChatMessage>& messages);

// The sampling fields both endpoints share (also used by /generate through
// its own spelling). `chat` selects the chat spelling of max tokens
// (max_completion_tokens or max_tokens). Unknown keys are not checked here
// (see RejectUnknownFields).
MaybeApiError ParseSamplingOptions(const Json& body,
                                   const ProtocolLimits& limits, bool chat,
                                   SamplingOptions* out);

// bootstrap_host / bootstrap_port / bootstrap_room at the top level of
// `body`: host and room together or neither; a 400 naming the field
// otherwise (also for n > 1 or several prompts, which would share a room).
MaybeApiError ParseBootstrapFields(const Json& body,
                                   std::optional<BootstrapFields>* out);

// Range checks on an already-filled SamplingOptions. The `param` of an
// error is `prefix` + the field's name, with `max_tokens_name` for
// max_tokens ("max_tokens", or "max_new_tokens" for /generate).
MaybeApiError ValidateSamplingOptions(const SamplingOptions& s,
                                      const ProtocolLimits& limits,
                                      const std::string& prefix,
                                      const std::string& max_tokens_name);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_OPENAI_REQUEST_H_
