#include "server/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <utility>

#include "server/json_fields.h"

namespace tessera::server {
namespace {

// Parameters OpenAI defines that Tessera rejects whenever they are set.
MaybeApiError RejectUnsupported(const Json& body, bool chat) {
  for (const char* key : {"functions", "function_call", "audio", "prediction",
                          "web_search_options"}) {
    if (HasValue(body, key)) return UnsupportedParameter(key);
  }
  for (const char* key : {"lora_path", "return_hidden_states",
                          "reasoning_effort"}) {
    if (HasValue(body, key)) {
      return UnsupportedParameter(
          key, std::string_view(key) == "reasoning_effort"
                   ? "turn thinking off with \"chat_template_kwargs\": "
                     "{\"enable_thinking\": false} where the model's template "
                     "has it"
                   : "");
    }
  }
  if (HasValue(body, "store") &&
      !(body["store"].is_boolean() && !body["store"].get<bool>())) {
    return UnsupportedParameter("store",
                                "Tessera keeps no completions; send false or "
                                "leave it out");
  }
  if (HasValue(body, "modalities")) {
    const Json& m = body["modalities"];
    if (!(m.is_array() && m.size() == 1 && m[0] == "text")) {
      return UnsupportedParameter("modalities", "only [\"text\"] is accepted");
    }
  }
  if (!chat && HasValue(body, "suffix")) {
    const Json& s = body["suffix"];
    if (!(s.is_string() && s.get<std::string>().empty())) {
      return UnsupportedParameter("suffix", "insertion is not implemented");
    }
  }
  return std::nullopt;
}

MaybeApiError ParseStreamFields(const Json& body, bool* stream,
                                bool* include_usage) {
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "stream", stream));
  if (!HasValue(body, "stream_options")) return std::nullopt;
  const Json& so = body["stream_options"];
  if (!so.is_object()) return WrongType("stream_options", "an object", so);
  if (!*stream) {
    return BadRequest("'stream_options' is only allowed when 'stream' is true",
                      "stream_options");
  }
  if (HasValue(so, "include_usage")) {
    const Json& v = so["include_usage"];
    if (!v.is_boolean()) {
      return WrongType("stream_options.include_usage", "true or false", v);
    }
    *include_usage = v.get<bool>();
  }
  return std::nullopt;
}

MaybeApiError ParseLogitBias(const Json& body, std::map<int32_t, float>* out) {
  if (!HasValue(body, "logit_bias")) return std::nullopt;
  const Json& lb = body["logit_bias"];
  if (!lb.is_object()) {
    return WrongType("logit_bias",
                     "an object mapping token ids (as strings) to numbers", lb);
  }
  for (auto it = lb.begin(); it != lb.end(); ++it) {
    const std::string& key = it.key();
    bool digits = !key.empty() && key.size() <= 10;
    for (char ch : key) digits = digits && ch >= '0' && ch <= '9';
    const long long id = digits ? std::strtoll(key.c_str(), nullptr, 10) : -1;
    if (!digits || id > std::numeric_limits<int32_t>::max()) {
      return BadRequest(
          fmt::format("'logit_bias' keys must be token ids written as "
                      "non-negative integers, not \"{}\"",
                      key),
          "logit_bias");
    }
    if (!it->is_number()) {
      return WrongType(fmt::format("logit_bias.{}", key), "a number", *it);
    }
    const double bias = it->get<double>();
    if (!(bias >= -100.0 && bias <= 100.0)) {
      return BadRequest(
          fmt::format("'logit_bias' values must be in [-100, 100]; token {} "
                      "has {}",
                      key, bias),
          "logit_bias");
    }
    (*out)[static_cast<int32_t>(id)] = static_cast<float>(bias);
  }
  return std::nullopt;
}

ApiError OutOfRange(const std::string& param, const std::string& rule,
                    const std::string& value) {
  return BadRequest(fmt::format("'{}' must be {}; got {}", param, rule, value),
                    param);
}

MaybeApiError CheckIntRange(const char* key, const std::optional<int64_t>& v,
                            int64_t lo, int64_t hi, const std::string& rule) {
  if (v && (*v < lo || *v > hi)) {
    return OutOfRange(key, rule, std::to_string(*v));
  }
  return std::nullopt;
}

}  // namespace

MaybeApiError ValidateSamplingOptions(const SamplingOptions& s,
                                      const ProtocolLimits& limits,
                                      const std::string& prefix,
                                      const std::string& max_tokens_name) {
  auto name = [&](const char* field) { return prefix + field; };
  auto num = [](double v) { return fmt::format("{}", v); };
  // 0 only scores the prompt: the routes that allow it say so themselves.
  if (s.max_tokens && *s.max_tokens < 0) {
    return OutOfRange(prefix + max_tokens_name, "at least 1",
                      std::to_string(*s.max_tokens));
  }
  if (!(s.temperature >= 0.0)) {
    return OutOfRange(name("temperature"), ">= 0 (0 is greedy)",
                      num(s.temperature));
  }
  if (!(s.top_p > 0.0 && s.top_p <= 1.0)) {
    return OutOfRange(name("top_p"), "in (0, 1]", num(s.top_p));
  }
  if (s.top_k != -1 && s.top_k < 1) {
    return OutOfRange(name("top_k"), "-1 (disabled) or at least 1",
                      std::to_string(s.top_k));
  }
  if (!(s.min_p >= 0.0 && s.min_p <= 1.0)) {
    return OutOfRange(name("min_p"), "in [0, 1]", num(s.min_p));
  }
  if (!(s.presence_penalty >= -2.0 && s.presence_penalty <= 2.0)) {
    return OutOfRange(name("presence_penalty"), "in [-2, 2]",
                      num(s.presence_penalty));
  }
  if (!(s.frequency_penalty >= -2.0 && s.frequency_penalty <= 2.0)) {
    return OutOfRange(name("frequency_penalty"), "in [-2, 2]",
                      num(s.frequency_penalty));
  }
  if (!(s.repetition_penalty > 0.0 && s.repetition_penalty <= 2.0)) {
    return OutOfRange(name("repetition_penalty"), "in (0, 2] (1 is off)",
                      num(s.repetition_penalty));
  }
  if (s.min_tokens < 0 || (s.max_tokens && s.min_tokens > *s.max_tokens)) {
    return OutOfRange(name("min_tokens"),
                      fmt::format("in [0, {}] ({})",
                                  s.max_tokens ? *s.max_tokens : 0,
                                  prefix + max_tokens_name),
                      std::to_string(s.min_tokens));
  }
  if (s.n < 1 || s.n > limits.max_n) {
    return OutOfRange(
        name("n"),
        fmt::format("between 1 and {} (this server's limit)", limits.max_n),
        std::to_string(s.n));
  }
  return std::nullopt;
}

// response_format (OpenAI) and regex / ebnf / json_schema (SGLang): at most
// one constraint.
MaybeApiError ParseConstraint(const Json& body,
                              std::optional<ConstraintSpec>* out) {
  std::vector<ConstraintSpec> found;
  if (HasValue(body, "response_format")) {
    const Json& rf = body["response_format"];
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
      return BadRequest(
          "'response_format' must be {\"type\": \"text\" | \"json_object\" "
          "| \"json_schema\", ...}",
          "response_format");
    }
    const std::string type = rf["type"].get<std::string>();
    if (type == "json_object") {
      found.push_back({ConstraintSpec::Kind::kJsonObject, "", "response_format"});
    } else if (type == "json_schema") {
      if (!rf.contains("json_schema") || !rf["json_schema"].is_object() ||
          !rf["json_schema"].contains("schema") ||
          !(rf["json_schema"]["schema"].is_object() ||
            rf["json_schema"]["schema"].is_boolean())) {
        return BadRequest(
            "'response_format' of type json_schema needs \"json_schema\": "
            "{\"name\": ..., \"schema\": {...}, \"strict\": true}",
            "response_format.json_schema");
      }
      for (auto it = rf["json_schema"].begin(); it != rf["json_schema"].end();
           ++it) {
        if (it.key() != "name" && it.key() != "schema" &&
            it.key() != "strict" && it.key() != "description") {
          return BadRequest(
              fmt::format("'response_format.json_schema.{}' is not a field "
                          "Tessera knows (name, schema, strict, description)",
                          it.key()),
              "response_format.json_schema." + it.key());
        }
      }
      found.push_back({ConstraintSpec::Kind::kJsonSchema,
                       rf["json_schema"]["schema"].dump(),
                       "response_format.json_schema.schema"});
    } else if (type != "text") {
      return BadRequest(fmt::format("'response_format.type' is \"{}\"; "
                                    "expected text, json_object or "
                                    "json_schema",
                                    type),
                        "response_format.type");
    }
  }
  for (auto [key, kind] :
       {std::pair{"regex", ConstraintSpec::Kind::kRegex},
        std::pair{"ebnf", ConstraintSpec::Kind::kEbnf},
        std::pair{"json_schema", ConstraintSpec::Kind::kJsonSchema}}) {
    if (!HasValue(body, key)) continue;
    const Json& v = body[key];
    if (v.is_string()) {
      found.push_back({kind, v.get<std::string>(), key});
    } else if (kind == ConstraintSpec::Kind::kJsonSchema && v.is_object()) {
      found.push_back({kind, v.dump(), key});
    } else {
      return WrongType(key,
                       kind == ConstraintSpec::Kind::kJsonSchema
                           ? "a JSON Schema (an object, or its JSON text)"
                           : "a string",
                       v);
    }
  }
  if (found.size() > 1) {
    return BadRequest(fmt::format("give one structured-output constraint, "
                                  "not both '{}' and '{}'",
                                  found[0].param, found[1].param),
                      found[1].param);
  }
  if (!found.empty()) *out = std::move(found[0]);
  return std::nullopt;
}

// The fields ParseSamplingOptions reads besides the max-tokens spellings,
// which differ per endpoint.
constexpr const char* kSamplingFields[] = {"temperature",
                                           "top_p",
                                           "top_k",
                                           "min_p",
                                           "presence_penalty",
                                           "frequency_penalty",
                                           "repetition_penalty",
                                           "n",
                                           "seed",
                                           "stop",
                                           "stop_token_ids",
                                           "ignore_eos",
                                           "logit_bias",
                                           "best_of",
                                           "min_tokens",
                                           "skip_special_tokens",
                                           "spaces_between_special_tokens",
                                           "no_stop_trim",
                                           "regex",
                                           "ebnf",
                                           "json_schema",
                                           "response_format",
                                           // OpenAI bookkeeping, no effect
                                           "user",
                                           "metadata",
                                           "service_tier",
                                           "store",
                                           "bootstrap_host",
                                           "bootstrap_port",
                                           "bootstrap_room"};

MaybeApiError ParseBootstrapFields(const Json& body,
                                   std::optional<BootstrapFields>* out) {
  std::optional<std::string> host;
  std::optional<int64_t> port;
  std::optional<int64_t> room;
  TSR_RETURN_IF_API_ERROR(ReadString(body, "bootstrap_host", &host));
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "bootstrap_port", &port));
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "bootstrap_room", &room));
  if (!host && !room) {
    if (port) {
      return BadRequest("'bootstrap_port' needs 'bootstrap_host' and "
                        "'bootstrap_room'",
                        "bootstrap_port");
    }
    *out = std::nullopt;
    return std::nullopt;
  }
  if (!host || host->empty() || !room) {
    return BadRequest(
        "PD disaggregation needs both 'bootstrap_host' (the prefill server) "
        "and 'bootstrap_room' (an integer that pairs the two servers' copies "
        "of this request)",
        host ? "bootstrap_room" : "bootstrap_host");
  }
  if (*room < 0) {
    return BadRequest("'bootstrap_room' must be a non-negative integer",
                      "bootstrap_room");
  }
  if (port && (*port < 1 || *port > 65535)) {
    return BadRequest("'bootstrap_port' must be in [1, 65535]",
                      "bootstrap_port");
  }
  BootstrapFields b;
  b.host = *host;
  if (port) b.port = static_cast<int32_t>(*port);
  b.room = static_cast<uint64_t>(*room);
  *out = std::move(b);
  return std::nullopt;
}

MaybeApiError ParseSamplingOptions(const Json& body,
                                   const ProtocolLimits& limits, bool chat,
                                   SamplingOptions* out) {
  SamplingOptions s;
  std::optional<std::string> ignored_string;
  std::optional<int64_t> max_tokens;
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "max_tokens", &max_tokens));
  const char* max_tokens_name = "max_tokens";
  if (chat) {
    std::optional<int64_t> max_completion;
    TSR_RETURN_IF_API_ERROR(
        ReadInteger(body, "max_completion_tokens", &max_completion));
    if (max_completion) {
      if (max_tokens && *max_tokens != *max_completion) {
        return BadRequest(
            "'max_tokens' and 'max_completion_tokens' disagree; send only "
            "'max_completion_tokens'",
            "max_completion_tokens");
      }
      max_tokens = max_completion;
      max_tokens_name = "max_completion_tokens";
    }
  }
  s.max_tokens = max_tokens;

  auto read_double = [&](const char* key, double* field) -> MaybeApiError {
    std::optional<double> v;
    TSR_RETURN_IF_API_ERROR(ReadNumber(body, key, &v));
    if (v) *field = *v;
    return std::nullopt;
  };
  TSR_RETURN_IF_API_ERROR(read_double("temperature", &s.temperature));
  TSR_RETURN_IF_API_ERROR(read_double("top_p", &s.top_p));
  TSR_RETURN_IF_API_ERROR(read_double("min_p", &s.min_p));
  TSR_RETURN_IF_API_ERROR(read_double("presence_penalty", &s.presence_penalty));
  TSR_RETURN_IF_API_ERROR(
      read_double("frequency_penalty", &s.frequency_penalty));
  TSR_RETURN_IF_API_ERROR(
      read_double("repetition_penalty", &s.repetition_penalty));

  std::optional<int64_t> top_k, n;
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "top_k", &top_k));
  TSR_RETURN_IF_API_ERROR(CheckIntRange("top_k", top_k, -1,
                                        std::numeric_limits<int32_t>::max(),
                                        "-1 (disabled) or at least 1"));
  if (top_k) s.top_k = static_cast<int32_t>(*top_k);
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "n", &n));
  TSR_RETURN_IF_API_ERROR(CheckIntRange(
      "n", n, 1, limits.max_n,
      fmt::format("between 1 and {} (this server's limit)", limits.max_n)));
  if (n) s.n = static_cast<int32_t>(*n);
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "seed", &s.seed));

  TSR_RETURN_IF_API_ERROR(ReadStringOrList(body, "stop", &s.stop));
  if (HasValue(body, "stop_token_ids")) {
    TSR_RETURN_IF_API_ERROR(ReadTokenIds(body["stop_token_ids"],
                                         "stop_token_ids", &s.stop_token_ids));
  }
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "ignore_eos", &s.ignore_eos));
  TSR_RETURN_IF_API_ERROR(ParseLogitBias(body, &s.logit_bias));
  std::optional<int64_t> min_tokens;
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "min_tokens", &min_tokens));
  TSR_RETURN_IF_API_ERROR(CheckIntRange("min_tokens", min_tokens, 0,
                                        std::numeric_limits<int32_t>::max(),
                                        "at least 0"));
  if (min_tokens) s.min_tokens = static_cast<int32_t>(*min_tokens);
  TSR_RETURN_IF_API_ERROR(
      ReadBool(body, "skip_special_tokens", &s.skip_special_tokens));
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "spaces_between_special_tokens",
                                   &s.spaces_between_special_tokens));
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "no_stop_trim", &s.no_stop_trim));
  TSR_RETURN_IF_API_ERROR(ParseConstraint(body, &s.constraint));
  TSR_RETURN_IF_API_ERROR(ReadString(body, "user", &ignored_string));
  if (HasValue(body, "metadata") && !body["metadata"].is_object()) {
    return WrongType("metadata", "an object of strings", body["metadata"]);
  }
  TSR_RETURN_IF_API_ERROR(ReadString(body, "service_tier", &ignored_string));

  if (HasValue(body, "best_of")) {
    std::optional<int64_t> best_of;
    TSR_RETURN_IF_API_ERROR(ReadInteger(body, "best_of", &best_of));
    if (*best_of < s.n) {
      return OutOfRange("best_of", fmt::format("at least n ({})", s.n),
                        std::to_string(*best_of));
    }
    if (*best_of > s.n) {
      return UnsupportedParameter("best_of",
                                  "best_of greater than n is not implemented");
    }
  }
  TSR_RETURN_IF_API_ERROR(
      ValidateSamplingOptions(s, limits, "", max_tokens_name));
  TSR_RETURN_IF_API_ERROR(ParseBootstrapFields(body, &s.bootstrap));
  if (s.bootstrap && s.n > 1) {
    return BadRequest(
        "n > 1 is not supported with PD disaggregation (bootstrap_room "
        "pairs one prefill with one decode); send n separate requests",
        "n");
  }
  *out = std::move(s);
  return std::nullopt;
}

namespace {

bool IsTokenArray(const Json& v) {
  if (!v.is_array() || v.empty()) return false;
  for (const Json& e : v) {
    if (!e.is_number()) return false;
  }
  return true;
}

}  // namespace

MaybeApiError ParsePromptList(const Json& body, const std::string& field,
                              const ProtocolLimits& limits,
                              std::vector<CompletionPrompt>* out) {
  if (!HasValue(body, field.c_str())) {
    return BadRequest(
        fmt::format("'{}' is required: a string, an array of token ids, "
                    "or a list of either",
                    field),
        field);
  }
  const Json& p = body[field];
  auto add_tokens = [&](const Json& ids,
                        const std::string& param) -> MaybeApiError {
    CompletionPrompt prompt;
    prompt.is_token_ids = true;
    TSR_RETURN_IF_API_ERROR(ReadTokenIds(ids, param, &prompt.token_ids));
    if (prompt.token_ids.empty()) {
      return BadRequest(
          fmt::format("'{}' must not be an empty token array", param),
          field);
    }
    out->push_back(std::move(prompt));
    return std::nullopt;
  };
  if (p.is_string()) {
    out->push_back(CompletionPrompt{false, p.get<std::string>(), {}});
    return std::nullopt;
  }
  if (!p.is_array()) {
    return WrongType(field,
                     "a string, an array of token ids, or a list of either", p);
  }
  if (p.empty()) {
    return BadRequest(fmt::format("'{}' must not be an empty array", field),
                      field);
  }
  if (IsTokenArray(p)) return add_tokens(p, field);
  TSR_RETURN_IF_API_ERROR(CheckPromptCount(p.size(), limits, field));
  for (size_t i = 0; i < p.size(); ++i) {
    const Json& e = p[i];
    const std::string param = fmt::format("{}[{}]", field, i);
    if (e.is_string()) {
      out->push_back(CompletionPrompt{false, e.get<std::string>(), {}});
    } else if (e.is_array()) {
      TSR_RETURN_IF_API_ERROR(add_tokens(e, param));
    } else {
      return BadRequest(
          fmt::format("'{}' must be a string or an array of token ids, not {}",
                      param, JsonTypeName(e)),
          field);
    }
  }
  return std::nullopt;
}

MaybeApiError CheckPromptCount(size_t count, const ProtocolLimits& limits,
                               const std::string& param) {
  if (count <= static_cast<size_t>(limits.max_prompts)) return std::nullopt;
  return BadRequest(
      fmt::format("'{}' holds {} prompts; a request may carry at most {} "
                  "(send the rest as further requests)",
                  param, count, limits.max_prompts),
      param);
}

MaybeApiError ParseCompletionRequest(const Json& body,
                                     const ProtocolLimits& limits,
                                     CompletionRequest* out) {
  if (!body.is_object()) {
    return BadRequest(
        fmt::format("the request body must be a JSON object, "
                    "not {}",
                    JsonTypeName(body)));
  }
  TSR_RETURN_IF_API_ERROR(RejectUnsupported(body, /*chat=*/false));
  CompletionRequest r;
  TSR_RETURN_IF_API_ERROR(ReadString(body, "model", &r.model));
  TSR_RETURN_IF_API_ERROR(ParsePromptList(body, "prompt", limits, &r.prompts));
  TSR_RETURN_IF_API_ERROR(
      ParseSamplingOptions(body, limits, false, &r.sampling));
  TSR_RETURN_IF_API_ERROR(ParseStreamFields(body, &r.stream, &r.include_usage));
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "echo", &r.echo));
  if (HasValue(body, "logprobs")) {
    const Json& lp = body["logprobs"];
    std::optional<int64_t> k;
    if (lp.is_boolean()) {
      return WrongType("logprobs",
                       "an integer (how many top alternatives per token)", lp);
    }
    TSR_RETURN_IF_API_ERROR(ReadInteger(body, "logprobs", &k));
    TSR_RETURN_IF_API_ERROR(CheckIntRange(
        "logprobs", k, 0, limits.max_top_logprobs,
        fmt::format("between 0 and {}", limits.max_top_logprobs)));
    r.logprobs = static_cast<int32_t>(*k);
  }
  if (r.sampling.max_tokens && *r.sampling.max_tokens == 0 && !r.echo) {
    return OutOfRange("max_tokens",
                      "at least 1 (0 only with echo: the prompt alone, scored "
                      "with logprobs)",
                      "0");
  }
  if (r.sampling.bootstrap && r.prompts.size() > 1) {
    return BadRequest("a list of prompts is not supported with PD "
                      "disaggregation (one bootstrap_room per request)",
                      "prompt");
  }
  TSR_RETURN_IF_API_ERROR(RejectUnknownFields(
      body,
      {"model", "prompt", "max_tokens", "stream", "stream_options", "echo",
       "logprobs", "suffix", "response_format", "modalities"},
      "completions", kSamplingFields));
  // OpenAI, SGLang and vLLM: 16 tokens when the client does not say (or
  // min_tokens, when that asks for more).
  if (!r.sampling.max_tokens) {
    r.sampling.max_tokens =
        std::max<int64_t>(kDefaultCompletionMaxTokens, r.sampling.min_tokens);
  }
  *out = std::move(r);
  return std::nullopt;
}

namespace {

MaybeApiError ParseContent(const Json& content, const std::string& param,
                           std::optional<std::string>* out) {
  if (content.is_null()) return std::nullopt;
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) {
    return WrongType(param, "a string or an array of text parts", content);
  }
  std::string joined;
  for (size_t j = 0; j < content.size(); ++j) {
    const Json& part = content[j];
    const std::string part_param = fmt::format("{}[{}]", param, j);
    if (!part.is_object() || !part.contains("type") ||
        !part["type"].is_string()) {
      return BadRequest(fmt::format("'{}' must be an object like "
                                    "{{\"type\": \"text\", \"text\": \"...\"}}",
                                    part_param),
                        part_param);
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") {
      return UnsupportedParameter(
          part_param,
          fmt::format("content parts of type '{}' are not implemented; only "
                      "'text' is",
                      type));
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return BadRequest(fmt::format("'{}' needs a string \"text\"", part_param),
                        part_param);
    }
    if (j > 0) joined += '\n';
    joined += part["text"].get<std::string>();
  }
  *out = std::move(joined);
  return std::nullopt;
}

MaybeApiError ParseToolCalls(const Json& calls, const std::string& param,
                             std::vector<ToolCall>* out) {
  if (!calls.is_array()) return WrongType(param, "an array", calls);
  for (size_t k = 0; k < calls.size(); ++k) {
    const Json& c = calls[k];
    const std::string p = fmt::format("{}[{}]", param, k);
    if (!c.is_object()) return WrongType(p, "an object", c);
    ToolCall call;
    if (HasValue(c, "id")) {
      if (!c["id"].is_string())
        return WrongType(p + ".id", "a string", c["id"]);
      call.id = c["id"].get<std::string>();
    }
    if (HasValue(c, "type") && c["type"] != "function") {
      return BadRequest(fmt::format("'{}.type' must be \"function\"", p),
                        p + ".type");
    }
    if (!HasValue(c, "function") || !c["function"].is_object()) {
      return BadRequest(
          fmt::format("'{}' needs \"function\": {{\"name\", \"arguments\"}}",
                      p),
          p + ".function");
    }
    const Json& f = c["function"];
    if (!f.contains("name") || !f["name"].is_string()) {
      return BadRequest(fmt::format("'{}.function.name' must be a string", p),
                        p + ".function.name");
    }
    call.name = f["name"].get<std::string>();
    if (HasValue(f, "arguments")) {
      const Json& a = f["arguments"];
      // OpenAI sends a JSON string; accept an object too and serialise it.
      if (a.is_string()) {
        call.arguments = a.get<std::string>();
      } else if (a.is_object()) {
        call.arguments = a.dump();
      } else {
        return WrongType(p + ".function.arguments", "a JSON string", a);
      }
    }
    out->push_back(std::move(call));
  }
  return std::nullopt;
}

MaybeApiError ParseMessage(const Json& m, size_t i, ChatMessage* out) {
  const std::string param = fmt::format("messages[{}]", i);
  if (!m.is_object()) {
    return BadRequest(fmt::format("'{}' must be an object like {{\"role\": "
                                  "\"user\", \"content\": \"...\"}}, not {}",
                                  param, JsonTypeName(m)),
                      param);
  }
  if (!m.contains("role") || !m["role"].is_string()) {
    return BadRequest(fmt::format("'{}' needs a string \"role\"", param),
                      param + ".role");
  }
  std::string role = m["role"].get<std::string>();
  if (role == "developer") role = "system";
  if (role != "system" && role != "user" && role != "assistant" &&
      role != "tool") {
    return BadRequest(
        fmt::format("'{}.role' is \"{}\"; expected system, user, assistant "
                    "or tool",
                    param, role),
        param + ".role");
  }
  ChatMessage msg;
  msg.role = role;
  if (m.contains("content")) {
    TSR_RETURN_IF_API_ERROR(
        ParseContent(m["content"], param + ".content", &msg.content));
  }
  if (HasValue(m, "name")) {
    if (!m["name"].is_string()) {
      return WrongType(param + ".name", "a string", m["name"]);
    }
    msg.name = m["name"].get<std::string>();
  }
  if (HasValue(m, "tool_calls")) {
    if (role != "assistant") {
      return BadRequest(fmt::format("'{}.tool_calls' is only allowed on "
                                    "assistant messages",
                                    param),
                        param + ".tool_calls");
    }
    TSR_RETURN_IF_API_ERROR(ParseToolCalls(
        m["tool_calls"], param + ".tool_calls", &msg.tool_calls));
  }
  if (HasValue(m, "reasoning_content")) {
    if (!m["reasoning_content"].is_string()) {
      return WrongType(param + ".reasoning_content", "a string",
                       m["reasoning_content"]);
    }
    msg.reasoning_content = m["reasoning_content"].get<std::string>();
  }
  if (role == "tool") {
    if (!HasValue(m, "tool_call_id") || !m["tool_call_id"].is_string()) {
      return BadRequest(fmt::format("'{}' is a tool message and needs a "
                                    "string \"tool_call_id\"",
                                    param),
                        param + ".tool_call_id");
    }
    msg.tool_call_id = m["tool_call_id"].get<std::string>();
  }
  if (!msg.content && !(role == "assistant" && !msg.tool_calls.empty())) {
    return BadRequest(fmt::format("'{}' needs \"content\" (a string or an "
                                  "array of text parts)",
                                  param),
                      param + ".content");
  }
  *out = std::move(msg);
  return std::nullopt;
}

MaybeApiError ParseTools(const Json& body, Json* tools, Json* tool_choice) {
  if (HasValue(body, "tools")) {
    const Json& t = body["tools"];
    if (!t.is_array()) return WrongType("tools", "an array of tools", t);
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string p = fmt::format("tools[{}]", i);
      const Json& tool = t[i];
      // Compared as JSON: a "type" that is not a string is a 400, never
      // json::value's type_error (found by fuzz/request_body_fuzzer).
      if (!tool.is_object() || !tool.contains("type") ||
          tool["type"] != "function" ||
          !tool.contains("function") || !tool["function"].is_object()) {
        return BadRequest(fmt::format("'{}' must be {{\"type\": \"function\", "
                                      "\"function\": {{\"name\": ...}}}}",
                                      p),
                          p);
      }
      const Json& f = tool["function"];
      if (!f.contains("name") || !f["name"].is_string() ||
          f["name"].get<std::string>().empty()) {
        return BadRequest(
            fmt::format("'{}.function.name' must be a non-empty string", p),
            p + ".function.name");
      }
      if (HasValue(f, "parameters") && !f["parameters"].is_object()) {
        return WrongType(p + ".function.parameters", "a JSON schema object",
                         f["parameters"]);
      }
    }
    *tools = t;
  }
  if (!HasValue(body, "tool_choice")) return std::nullopt;
  const Json& c = body["tool_choice"];
  std::string named;
  if (c.is_string()) {
    const std::string s = c.get<std::string>();
    if (s != "none" && s != "auto" && s != "required") {
      return BadRequest(fmt::format("'tool_choice' is \"{}\"; expected "
                                    "\"none\", \"auto\" or \"required\"",
                                    s),
                        "tool_choice");
    }
    if (s == "none") {
      *tool_choice = c;
      return std::nullopt;
    }
  } else if (c.is_object()) {
    if (!c.contains("type") || c["type"] != "function" ||
        !c.contains("function") ||
        !c["function"].is_object() || !c["function"].contains("name") ||
        !c["function"]["name"].is_string()) {
      return BadRequest(
          "'tool_choice' object must be {\"type\": "
          "\"function\", \"function\": {\"name\": \"...\"}}",
          "tool_choice");
    }
    named = c["function"]["name"].get<std::string>();
  } else {
    return WrongType("tool_choice", "a string or an object", c);
  }
  if (tools->is_null() || tools->empty()) {
    return BadRequest("'tool_choice' needs 'tools'", "tool_choice");
  }
  if (!named.empty()) {
    bool found = false;
    for (const Json& tool : *tools) {
      if (tool["function"]["name"] == named) found = true;
    }
    if (!found) {
      return BadRequest(fmt::format("'tool_choice' names the function \"{}\" "
                                    "which is not in 'tools'",
                                    named),
                        "tool_choice");
    }
  }
  *tool_choice = c;
  return std::nullopt;
}

}  // namespace

MaybeApiError ParseChatRequest(const Json& body, const ProtocolLimits& limits,
                               ChatRequest* out) {
  if (!body.is_object()) {
    return BadRequest(
        fmt::format("the request body must be a JSON object, "
                    "not {}",
                    JsonTypeName(body)));
  }
  TSR_RETURN_IF_API_ERROR(RejectUnsupported(body, /*chat=*/true));
  ChatRequest r;
  TSR_RETURN_IF_API_ERROR(ReadString(body, "model", &r.model));
  if (!HasValue(body, "messages")) {
    return BadRequest(
        "'messages' is required: an array of {\"role\", "
        "\"content\"} objects",
        "messages");
  }
  const Json& messages = body["messages"];
  if (!messages.is_array()) {
    return WrongType("messages", "an array of message objects", messages);
  }
  if (messages.empty()) {
    return BadRequest("'messages' must not be empty", "messages");
  }
  r.messages.resize(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    TSR_RETURN_IF_API_ERROR(ParseMessage(messages[i], i, &r.messages[i]));
  }
  TSR_RETURN_IF_API_ERROR(ParseTools(body, &r.tools, &r.tool_choice));
  TSR_RETURN_IF_API_ERROR(
      ParseSamplingOptions(body, limits, true, &r.sampling));
  if (r.sampling.max_tokens && *r.sampling.max_tokens < 1) {
    return OutOfRange(HasValue(body, "max_completion_tokens")
                          ? "max_completion_tokens"
                          : "max_tokens",
                      "at least 1", std::to_string(*r.sampling.max_tokens));
  }
  TSR_RETURN_IF_API_ERROR(ParseStreamFields(body, &r.stream, &r.include_usage));
  if (HasValue(body, "logprobs") && !body["logprobs"].is_boolean()) {
    return WrongType("logprobs", "true or false", body["logprobs"]);
  }
  TSR_RETURN_IF_API_ERROR(ReadBool(body, "logprobs", &r.logprobs));
  std::optional<int64_t> top;
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "top_logprobs", &top));
  TSR_RETURN_IF_API_ERROR(
      CheckIntRange("top_logprobs", top, 0, limits.max_top_logprobs,
                    fmt::format("between 0 and {}", limits.max_top_logprobs)));
  if (top) {
    if (!r.logprobs && *top > 0) {
      return BadRequest("'top_logprobs' needs 'logprobs': true",
                        "top_logprobs");
    }
    r.top_logprobs = static_cast<int32_t>(*top);
  }
  if (HasValue(body, "chat_template_kwargs")) {
    if (!body["chat_template_kwargs"].is_object()) {
      return WrongType("chat_template_kwargs", "an object",
                       body["chat_template_kwargs"]);
    }
    r.chat_template_kwargs = body["chat_template_kwargs"];
  }
  TSR_RETURN_IF_API_ERROR(
      ReadBool(body, "separate_reasoning", &r.separate_reasoning));
  if (HasValue(body, "parallel_tool_calls") &&
      !body["parallel_tool_calls"].is_boolean()) {
    return WrongType("parallel_tool_calls", "true or false",
                     body["parallel_tool_calls"]);
  }
  TSR_RETURN_IF_API_ERROR(
      ReadBool(body, "parallel_tool_calls", &r.parallel_tool_calls));
  TSR_RETURN_IF_API_ERROR(RejectUnknownFields(
      body,
      {"model", "messages", "tools", "tool_choice", "parallel_tool_calls",
       "max_tokens", "max_completion_tokens", "stream", "stream_options",
       "logprobs", "top_logprobs", "chat_template_kwargs", "separate_reasoning",
       "response_format", "modalities"},
      "chat completions", kSamplingFields));
  *out = std::move(r);
  return std::nullopt;
}

Json ChatMessagesToJson(const std::vector<ChatMessage>& messages) {
  Json out = Json::array();
  for (const ChatMessage& m : messages) {
    Json j = Json::object();
    j["role"] = m.role;
    j["content"] = m.content ? Json(*m.content) : Json(nullptr);
    if (m.name) j["name"] = *m.name;
    if (!m.tool_calls.empty()) {
      Json calls = Json::array();
      for (const ToolCall& c : m.tool_calls) {
        calls.push_back(
            {{"id", c.id},
             {"type", c.type},
             {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
      }
      j["tool_calls"] = std::move(calls);
    }
    if (m.tool_call_id) j["tool_call_id"] = *m.tool_call_id;
    if (m.reasoning_content) j["reasoning_content"] = *m.reasoning_content;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace tessera::server
