#include "server/native_protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "server/json_fields.h"

namespace tessera::server {
namespace {

constexpr const char* kSamplingKeys[] = {"max_new_tokens",
                                         "min_new_tokens",
                                         "temperature",
                                         "top_p",
                                         "top_k",
                                         "min_p",
                                         "stop",
                                         "stop_token_ids",
                                         "ignore_eos",
                                         "skip_special_tokens",
                                         "spaces_between_special_tokens",
                                         "no_stop_trim",
                                         "presence_penalty",
                                         "frequency_penalty",
                                         "repetition_penalty",
                                         "logit_bias",
                                         "n",
                                         "seed",
                                         "regex",
                                         "ebnf",
                                         "json_schema"};

// SGLang's spelling -> the OpenAI spelling ParseSamplingOptions reads.
constexpr std::pair<const char*, const char*> kRenamed[] = {
    {"max_new_tokens", "max_tokens"}, {"min_new_tokens", "min_tokens"}};

// Re-keys an error from a sampling_params field so `param` reads
// "sampling_params.<field>".
ApiError InSamplingParams(ApiError e) {
  if (!e.param.empty() && !e.message.empty() && e.message[0] == '\'') {
    e.message = "sampling_params." + e.message.substr(1);  // after the quote
    e.message.insert(0, "'");
  }
  if (!e.param.empty()) {
    e.param = "sampling_params." + e.param;
  }
  return e;
}

MaybeApiError ParseSamplingParams(const Json& body,
                                  const ProtocolLimits& limits,
                                  SamplingOptions* out) {
  if (!HasValue(body, "sampling_params")) return std::nullopt;
  const Json& sp = body["sampling_params"];
  if (!sp.is_object()) return WrongType("sampling_params", "an object", sp);
  for (auto it = sp.begin(); it != sp.end(); ++it) {
    bool known = false;
    for (const char* k : kSamplingKeys) known = known || it.key() == k;
    if (!known) {
      std::string names;
      for (const char* k : kSamplingKeys) {
        names += names.empty() ? "" : ", ";
        names += k;
      }
      return BadRequest(
          fmt::format("'sampling_params.{}' is not a sampling parameter "
                      "Tessera knows; known: {}",
                      it.key(), names),
          "sampling_params." + it.key());
    }
  }
  // Reuse the OpenAI field readers on a copy spelled the OpenAI way.
  Json openai = sp;
  for (const auto& [sglang, oai] : kRenamed) {
    if (openai.contains(sglang)) {
      openai[oai] = openai[sglang];
      openai.erase(sglang);
    }
  }
  MaybeApiError e = ParseSamplingOptions(openai, limits, false, out);
  if (e) {
    for (const auto& [sglang, oai] : kRenamed) {
      if (e->param != oai) continue;
      e->param = sglang;
      auto pos = e->message.find(oai);
      if (pos != std::string::npos) {
        e->message.replace(pos, std::string_view(oai).size(), sglang);
      }
    }
    return InSamplingParams(std::move(*e));
  }
  return std::nullopt;
}

}  // namespace

MaybeApiError ParseGenerateRequest(const Json& body,
                                   const ProtocolLimits& limits,
                                   GenerateRequest* out) {
  if (!body.is_object()) {
    return BadRequest(
        fmt::format("the /generate body must be a JSON object, not {}",
                    JsonTypeName(body)));
  }
  for (const char* key : {"image_data", "audio_data", "video_data", "lora_path",
                          "input_embeds"}) {
    if (HasValue(body, key)) return UnsupportedParameter(key);
  }
  {
    bool v = false;
    TSR_RETURN_IF_API_ERROR(ReadBool(body, "return_hidden_states", &v));
    if (v) return UnsupportedParameter("return_hidden_states");
  }
  GenerateRequest r;
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "return_logprob", &r.return_logprob));
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "return_text_in_logprobs",
                                   &r.return_text_in_logprobs));
  {
    std::optional<int64_t> start, top;
    TSR_RETURN_IF_API_ERROR(ReadInteger(body, "logprob_start_len", &start));
    TSR_RETURN_IF_API_ERROR(ReadInteger(body, "top_logprobs_num", &top));
    if (start && *start < -1) {
      return BadRequest("'logprob_start_len' must be -1 (output logprobs "
                        "only) or a prompt position >= 0",
                        "logprob_start_len");
    }
    if (top && (*top < 0 || *top > limits.max_top_logprobs)) {
      return BadRequest(fmt::format("'top_logprobs_num' must be between 0 "
                                    "and {}",
                                    limits.max_top_logprobs),
                        "top_logprobs_num");
    }
    r.logprob_start_len = start.value_or(-1);
    r.top_logprobs_num = static_cast<int32_t>(top.value_or(0));
  }
  const bool has_text = HasValue(body, "text");
  const bool has_ids = HasValue(body, "input_ids");
  if (has_text == has_ids) {
    return BadRequest(has_text ? "give either 'text' or 'input_ids', not both"
                               : "'text' or 'input_ids' is required",
                      "text");
  }
  if (has_text) {
    const Json& t = body["text"];
    if (t.is_string()) {
      r.prompts.push_back(CompletionPrompt{false, t.get<std::string>(), {}});
    } else if (t.is_array() && !t.empty()) {
      r.batched = true;
      TSR_RETURN_IF_API_ERROR(CheckPromptCount(t.size(), limits, "text"));
      for (size_t i = 0; i < t.size(); ++i) {
        if (!t[i].is_string()) {
          return WrongType(fmt::format("text[{}]", i), "a string", t[i]);
        }
        r.prompts.push_back(
            CompletionPrompt{false, t[i].get<std::string>(), {}});
      }
    } else {
      return WrongType("text", "a string or a non-empty array of strings", t);
    }
  } else {
    const Json& ids = body["input_ids"];
    if (!ids.is_array() || ids.empty()) {
      return WrongType("input_ids",
                       "a non-empty array of token ids or of such arrays", ids);
    }
    const bool nested = ids[0].is_array();
    r.batched = nested;
    if (nested) {
      TSR_RETURN_IF_API_ERROR(
          CheckPromptCount(ids.size(), limits, "input_ids"));
    }
    for (size_t i = 0; i < (nested ? ids.size() : 1); ++i) {
      CompletionPrompt p;
      p.is_token_ids = true;
      const std::string param =
          nested ? fmt::format("input_ids[{}]", i) : "input_ids";
      TSR_RETURN_IF_API_ERROR(
          ReadTokenIds(nested ? ids[i] : ids, param, &p.token_ids));
      if (p.token_ids.empty()) {
        return BadRequest(fmt::format("'{}' must not be empty", param),
                          "input_ids");
      }
      r.prompts.push_back(std::move(p));
    }
  }
  TSR_RETURN_IF_API_ERROR(ParseSamplingParams(body, limits, &r.sampling));
  if (r.sampling.max_tokens && *r.sampling.max_tokens == 0 &&
      !(r.return_logprob && r.logprob_start_len >= 0)) {
    return BadRequest(
        "'sampling_params.max_new_tokens' must be at least 1 (0 only scores "
        "the prompt: with return_logprob and logprob_start_len >= 0)",
        "sampling_params.max_new_tokens");
  }
  TSR_RETURN_IF_API_ERROR(ParseBootstrapFields(body, &r.sampling.bootstrap));
  if (r.sampling.bootstrap && (r.prompts.size() > 1 || r.sampling.n > 1)) {
    return BadRequest(
        "PD disaggregation takes one prompt and n = 1 per request (one "
        "bootstrap_room pairs one prefill with one decode)",
        "bootstrap_room");
  }
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "stream", &r.stream));
  TSR_RETURN_IF_API_ERROR(ReadString(body, "rid", &r.rid));
  if (r.rid) TSR_RETURN_IF_API_ERROR(CheckRid(*r.rid, "rid"));
  TSR_RETURN_IF_API_ERROR(RejectUnknownFields(
      body,
      {"text", "input_ids", "sampling_params", "stream", "rid",
       "return_logprob", "return_hidden_states", "bootstrap_host",
       "bootstrap_port", "bootstrap_room",
       "logprob_start_len", "top_logprobs_num", "return_text_in_logprobs"},
      "/generate"));
  *out = std::move(r);
  return std::nullopt;
}

MaybeApiError CheckRid(const std::string& rid, const std::string& param) {
  constexpr size_t kMaxRidLength = 128;
  const bool safe_chars =
      std::all_of(rid.begin(), rid.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '.' || c == '_' || c == ':' || c == '-';
      });
  if (rid.empty() || rid.size() > kMaxRidLength || !safe_chars) {
    return BadRequest(
        fmt::format("'{}' must be 1 to {} characters from A-Z, a-z, 0-9 and "
                    "'.', '_', ':', '-'",
                    param, kMaxRidLength),
        param);
  }
  return std::nullopt;
}

Json MatchedStopJson(const FinishReason& reason) {
  if (reason.kind != FinishReason::Kind::kStop) return nullptr;
  if (reason.matched_text) return *reason.matched_text;
  if (reason.matched_token) return *reason.matched_token;
  return nullptr;
}

Json FinishReasonJson(const FinishReason& reason) {
  switch (reason.kind) {
    case FinishReason::Kind::kStop:
      return Json{{"type", "stop"}, {"matched", MatchedStopJson(reason)}};
    case FinishReason::Kind::kLength:
      return Json{{"type", "length"}, {"length", reason.length}};
    case FinishReason::Kind::kAbort:
      return Json{{"type", "abort"},
                  {"message", reason.message},
                  {"cause", std::string(engine::AbortCauseName(reason.cause))}};
  }
  return nullptr;
}

std::string OpenAiFinishReason(const FinishReason& reason) {
  switch (reason.kind) {
    case FinishReason::Kind::kStop:
      return "stop";
    case FinishReason::Kind::kLength:
      return "length";
    case FinishReason::Kind::kAbort:
      return "abort";
  }
  return "stop";
}

Json GenerateResultJson(const GenerateResult& result) {
  Json meta = {{"id", result.id},
               {"prompt_tokens", result.prompt_tokens},
               {"completion_tokens", result.completion_tokens},
               {"cached_tokens", result.cached_tokens},
               {"finish_reason", result.finish_reason
                                     ? FinishReasonJson(*result.finish_reason)
                                     : Json(nullptr)}};
  if (result.has_logprobs) {
    meta["input_token_logprobs"] = result.input_token_logprobs;
    meta["output_token_logprobs"] = result.output_token_logprobs;
    if (result.has_top_logprobs) {
      meta["input_top_logprobs"] = result.input_top_logprobs;
      meta["output_top_logprobs"] = result.output_top_logprobs;
    }
  }
  return Json{{"text", result.text},
              {"output_ids", result.output_ids},
              {"meta_info", std::move(meta)}};
}

}  // namespace tessera::server
