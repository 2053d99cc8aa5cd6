// Builders for the OpenAI response objects and the Server-Sent Events
// framing of streams, shaped as the openai Python/JS clients parse them.
//
// Non-streaming: "text_completion" and "chat.completion" objects with usage.
// Streaming: one JSON object per SSE event,
//   data: {"id": ..., "object": "chat.completion.chunk", ...}\n\n
// the first chat chunk of each choice carries delta.role = "assistant", later
// ones content deltas, the last one finish_reason; with
// stream_options.include_usage a final chunk has "choices": [] and "usage";
// the stream ends with "data: [DONE]\n\n". Every chunk of one stream shares
// id, created and model. Stateless; thread-safe.
#ifndef TESSERA_SERVER_OPENAI_RESPONSE_H_
#define TESSERA_SERVER_OPENAI_RESPONSE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace tessera::server {

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};
// {"prompt_tokens", "completion_tokens", "total_tokens",
//  "prompt_tokens_details": {"cached_tokens"}}
Json UsageJson(const Usage& usage);

// One sampled token with its log-probability (natural log) and the top
// alternatives at that position, most likely first.
struct TokenLogprob {
  std::string token;  // the token's text
  double logprob = 0.0;
  std::vector<std::pair<std::string, double>> top;
  // The token's raw bytes when its text alone is not valid UTF-8 (part of a
  // character); empty: the bytes of `token`. Same for each `top` entry.
  std::string bytes;
  std::vector<std::string> top_bytes;  // empty or one per `top` entry
  // false: no logprob (a prompt's first token has nothing before it); the
  // completions form writes null for it and its top_logprobs.
  bool has_logprob = true;
};
// Chat form: {"content": [{"token", "logprob", "bytes", "top_logprobs":
// [{"token", "logprob", "bytes"}]}]}; bytes are the UTF-8 bytes as ints.
Json ChatLogprobsJson(const std::vector<TokenLogprob>& tokens);
// Completions form: {"tokens", "token_logprobs", "top_logprobs": [{text:
// logprob}], "text_offset"}; offsets count characters (code points, as
// OpenAI and vLLM do) from `first_offset`.
Json CompletionLogprobsJson(const std::vector<TokenLogprob>& tokens,
                            int64_t first_offset);

// "stop" | "length" | "tool_calls" | "abort"; empty renders as null.
// matched_stop (SGLang): the stop string or token id that ended the choice;
// null otherwise, and on chunks before the last.
struct CompletionChoice {
  int32_t index = 0;
  std::string text;
  std::string finish_reason;
  Json logprobs;  // null, or CompletionLogprobsJson(...)
  Json matched_stop;
};

struct ChatChoice {
  int32_t index = 0;
  std::optional<std::string> content;  // null when only tool calls
  std::optional<std::string> reasoning_content;
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;
  Json logprobs;  // null, or ChatLogprobsJson(...)
  Json matched_stop;
};

// Identity shared by every object of one response.
struct ResponseMeta {
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
  // OpenAI's system_fingerprint: names the backend configuration (Tessera's
  // version, the weights, dtype, plugin); empty renders as null.
  std::string system_fingerprint;
};

Json CompletionResponseJson(const ResponseMeta& meta,
                            const std::vector<CompletionChoice>& choices,
                            const Usage& usage);
Json ChatResponseJson(const ResponseMeta& meta,
                      const std::vector<ChatChoice>& choices,
                      const Usage& usage);

// One streamed piece of a tool call (OpenAI's delta.tool_calls[i]): the
// first piece of call `index` carries its id and function name, later ones
// only argument text to append.
struct ToolCallChunk {
  int32_t index = 0;
  std::optional<std::string> id;
  std::optional<std::string> name;
  std::string arguments;
};

// The change one chat chunk carries for one choice.
struct ChatDelta {
  int32_t index = 0;
  bool role = false;  // first chunk of the choice: "role": "assistant"
  std::optional<std::string> content;
  std::optional<std::string> reasoning_content;
  std::vector<ToolCall> tool_calls;  // rendered with their position as index
  std::vector<ToolCallChunk> tool_call_chunks;  // rendered after tool_calls
  std::string finish_reason;         // empty: null (not the last chunk)
  Json logprobs;                     // null or ChatLogprobsJson(...)
  Json matched_stop;                 // set on the last chunk only
};
Json ChatChunkJson(const ResponseMeta& meta, const ChatDelta& delta);
// A "text_completion" streaming chunk for one choice.
Json CompletionChunkJson(const ResponseMeta& meta,
                         const CompletionChoice& choice);
// The closing usage chunk: "choices": [] and "usage". `object` is
// "chat.completion.chunk" or "text_completion".
Json UsageChunkJson(const ResponseMeta& meta, const std::string& object,
                    const Usage& usage);

// "data: <compact json>\n\n" (invalid UTF-8 replaced, never throws).
std::string SseEvent(const Json& data);
// "data: [DONE]\n\n".
std::string SseDone();
// An error in the middle of a stream: SseEvent(error.ToJson()).
std::string SseError(const ApiError& error);

// GET /v1/models: {"object": "list", "data": [{"id", "object": "model",
// "created", "owned_by": "tessera", "root", "max_model_len"}]}.
struct ModelCard {
  std::string id;
  std::string root;  // the model directory or source; empty: id
  int64_t created = 0;
  int64_t max_model_len = 0;  // context length; 0: omitted
};
Json ModelListJson(const std::vector<ModelCard>& models);
// GET /v1/models/{id}: one card, as in the list.
Json ModelCardJson(const ModelCard& model);

// Compact serialisation used for every response body.
std::string DumpCompact(const Json& value);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_OPENAI_RESPONSE_H_
