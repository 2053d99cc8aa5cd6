// The bodies of Tessera's native endpoints, in SGLang's spelling:
//
// POST /generate
//   {"text": "..." | ["...", ...]  or  "input_ids": [ids] | [[ids], ...],
//    "sampling_params": {"max_new_tokens", "temperature", "top_p", "top_k",
//      "min_p", "stop", "stop_token_ids", "ignore_eos", "presence_penalty",
//      "frequency_penalty", "repetition_penalty", "n", "seed"},
//    "stream": bool, "rid": "..."}
//   → {"text": "...", "output_ids": [...], "meta_info": {"id",
//      "prompt_tokens", "completion_tokens", "cached_tokens",
//      "finish_reason": {"type": "stop", "matched": id|"str"|null} |
//                       {"type": "length", "length": N} |
//                       {"type": "abort", "message": "..."}}}
//   (a list of those when the input was a list). Unknown keys inside
//   sampling_params are 400 (a misspelt knob must not be silently dropped);
//   unknown top-level keys are ignored and logged at debug; image_data,
//   audio_data, lora_path and return_hidden_states: true are 400 "not
//   supported yet".
//   Logprobs as SGLang: "return_logprob": true adds meta_info
//   "output_token_logprobs" [[logprob, id, text|null], ...] and, with
//   "logprob_start_len" >= 0, "input_token_logprobs" for the prompt tokens
//   from that position (the prompt's first token: logprob null); with
//   "top_logprobs_num" k > 0 also "output_top_logprobs" /
//   "input_top_logprobs" (per position, k [logprob, id, text|null]);
//   "return_text_in_logprobs" fills the texts. max_new_tokens 0 (score the
//   prompt only) needs return_logprob with logprob_start_len >= 0.
//
// POST /tokenize and /detokenize take the same bodies as `tessera tokenize` /
// `tessera detokenize`, parsed by the same code (ParseTokenizeRequest in
// src/prompt/prompt_tools.h), and answer
//   {"tokens": [...], "count": N, "prompt": "<rendered text>"} and
//   {"text": "..."}.
// Stateless; thread-safe.
#ifndef TESSERA_SERVER_NATIVE_PROTOCOL_H_
#define TESSERA_SERVER_NATIVE_PROTOCOL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/finish_reason.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace tessera::server {

struct GenerateRequest {
  std::vector<CompletionPrompt> prompts;  // never empty
  bool batched = false;  // the input was a list: answer with a list
  SamplingOptions sampling;
  bool stream = false;
  std::optional<std::string> rid;
  bool return_logprob = false;
  int64_t logprob_start_len = -1;  // -1: output logprobs only
  int32_t top_logprobs_num = 0;
  bool return_text_in_logprobs = false;
};

MaybeApiError ParseGenerateRequest(const Json& body,
                                   const ProtocolLimits& limits,
                                   GenerateRequest* out);

// How a generation ended (engine/finish_reason.h).
using FinishReason = engine::FinishReason;
// A request id a client chose ("rid" of /generate and /abort_request): 1 to
// 128 characters from [A-Za-z0-9._:-], so that it can be echoed into JSON,
// logs and metrics as it is. Otherwise a 400 naming `param`.
MaybeApiError CheckRid(const std::string& rid, const std::string& param);

Json FinishReasonJson(const FinishReason& reason);
// SGLang's "matched_stop" of an OpenAI choice: the stop string, or the stop
// token id (EOS included), that ended it; null otherwise.
Json MatchedStopJson(const FinishReason& reason);
// The OpenAI spelling: "stop", "length" or "abort".
std::string OpenAiFinishReason(const FinishReason& reason);

struct GenerateResult {
  std::string id;
  std::string text;
  std::vector<int32_t> output_ids;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  // nullopt while streaming (not finished): "finish_reason": null.
  std::optional<FinishReason> finish_reason;
  // return_logprob: entries as SGLang writes them (see above); `top_*`
  // only with top_logprobs_num > 0.
  bool has_logprobs = false;
  Json input_token_logprobs = Json::array();
  Json output_token_logprobs = Json::array();
  Json input_top_logprobs = Json::array();
  Json output_top_logprobs = Json::array();
  bool has_top_logprobs = false;
};
Json GenerateResultJson(const GenerateResult& result);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_NATIVE_PROTOCOL_H_
