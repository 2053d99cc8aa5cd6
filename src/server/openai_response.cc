#include "server/openai_response.h"

#include "base/utf8.h"

namespace tessera::server {
namespace {

Json NullIfEmpty(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}

Json Bytes(const std::string& s) {
  Json out = Json::array();
  for (unsigned char c : s) out.push_back(int(c));
  return out;
}

Json ToolCallsJson(const std::vector<ToolCall>& calls, bool with_index) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    Json c = Json::object();
    if (with_index) c["index"] = i;
    c["id"] = calls[i].id;
    c["type"] = calls[i].type;
    c["function"] = {{"name", calls[i].name},
                     {"arguments", calls[i].arguments}};
    out.push_back(std::move(c));
  }
  return out;
}

Json Envelope(const ResponseMeta& meta, const char* object) {
  Json j = Json::object();
  j["id"] = meta.id;
  j["object"] = object;
  j["created"] = meta.created;
  j["model"] = meta.model;
  j["system_fingerprint"] = meta.system_fingerprint.empty()
                                ? Json(nullptr)
                                : Json(meta.system_fingerprint);
  return j;
}

}  // namespace

Json UsageJson(const Usage& usage) {
  return Json{
      {"prompt_tokens", usage.prompt_tokens},
      {"completion_tokens", usage.completion_tokens},
      {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
      {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

Json ChatLogprobsJson(const std::vector<TokenLogprob>& tokens) {
  Json content = Json::array();
  for (const TokenLogprob& t : tokens) {
    Json top = Json::array();
    for (size_t i = 0; i < t.top.size(); ++i) {
      const auto& [text, lp] = t.top[i];
      const bool raw = i < t.top_bytes.size() && !t.top_bytes[i].empty();
      top.push_back({{"token", text},
                     {"logprob", lp},
                     {"bytes", Bytes(raw ? t.top_bytes[i] : text)}});
    }
    content.push_back({{"token", t.token},
                       {"logprob", t.logprob},
                       {"bytes", Bytes(t.bytes.empty() ? t.token : t.bytes)},
                       {"top_logprobs", std::move(top)}});
  }
  return Json{{"content", std::move(content)}};
}

Json CompletionLogprobsJson(const std::vector<TokenLogprob>& tokens,
                            int64_t first_offset) {
  Json text = Json::array(), lps = Json::array(), tops = Json::array(),
       offsets = Json::array();
  int64_t offset = first_offset;
  for (const TokenLogprob& t : tokens) {
    text.push_back(t.token);
    if (!t.has_logprob) {
      lps.push_back(nullptr);
      tops.push_back(nullptr);
    } else {
      lps.push_back(t.logprob);
      Json top = Json::object();
      for (const auto& [tok, lp] : t.top) top[tok] = lp;
      tops.push_back(std::move(top));
    }
    offsets.push_back(offset);
    offset += CountUtf8Chars(t.token);
  }
  return Json{{"tokens", std::move(text)},
              {"token_logprobs", std::move(lps)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

Json CompletionResponseJson(const ResponseMeta& meta,
                            const std::vector<CompletionChoice>& choices,
                            const Usage& usage) {
  Json j = Envelope(meta, "text_completion");
  Json cs = Json::array();
  for (const CompletionChoice& c : choices) {
    cs.push_back({{"index", c.index},
                  {"text", c.text},
                  {"logprobs", c.logprobs},
                  {"finish_reason", NullIfEmpty(c.finish_reason)},
                  {"matched_stop", c.matched_stop}});
  }
  j["choices"] = std::move(cs);
  j["usage"] = UsageJson(usage);
  return j;
}

Json ChatResponseJson(const ResponseMeta& meta,
                      const std::vector<ChatChoice>& choices,
                      const Usage& usage) {
  Json j = Envelope(meta, "chat.completion");
  Json cs = Json::array();
  for (const ChatChoice& c : choices) {
    Json message = Json::object();
    message["role"] = "assistant";
    message["content"] = c.content ? Json(*c.content) : Json(nullptr);
    message["reasoning_content"] =
        c.reasoning_content ? Json(*c.reasoning_content) : Json(nullptr);
    if (!c.tool_calls.empty()) {
      message["tool_calls"] = ToolCallsJson(c.tool_calls, false);
    }
    cs.push_back({{"index", c.index},
                  {"message", std::move(message)},
                  {"logprobs", c.logprobs},
                  {"finish_reason", NullIfEmpty(c.finish_reason)},
                  {"matched_stop", c.matched_stop}});
  }
  j["choices"] = std::move(cs);
  j["usage"] = UsageJson(usage);
  return j;
}

Json ChatChunkJson(const ResponseMeta& meta, const ChatDelta& delta) {
  Json j = Envelope(meta, "chat.completion.chunk");
  Json d = Json::object();
  if (delta.role) d["role"] = "assistant";
  if (delta.content) d["content"] = *delta.content;
  if (delta.reasoning_content) {
    d["reasoning_content"] = *delta.reasoning_content;
  }
  if (!delta.tool_calls.empty()) {
    d["tool_calls"] = ToolCallsJson(delta.tool_calls, true);
  }
  for (const ToolCallChunk& chunk : delta.tool_call_chunks) {
    Json c = Json::object();
    c["index"] = chunk.index;
    if (chunk.id) {
      c["id"] = *chunk.id;
      c["type"] = "function";
    }
    Json fn = Json::object();
    if (chunk.name) fn["name"] = *chunk.name;
    fn["arguments"] = chunk.arguments;
    c["function"] = std::move(fn);
    if (!d.contains("tool_calls")) d["tool_calls"] = Json::array();
    d["tool_calls"].push_back(std::move(c));
  }
  Json choice = {{"index", delta.index},
                 {"delta", std::move(d)},
                 {"logprobs", delta.logprobs},
                 {"finish_reason", NullIfEmpty(delta.finish_reason)},
                 {"matched_stop", delta.matched_stop}};
  j["choices"] = Json::array({std::move(choice)});
  return j;
}

Json CompletionChunkJson(const ResponseMeta& meta,
                         const CompletionChoice& choice) {
  Json j = Envelope(meta, "text_completion");
  j["choices"] =
      Json::array({Json{{"index", choice.index},
                        {"text", choice.text},
                        {"logprobs", choice.logprobs},
                        {"finish_reason", NullIfEmpty(choice.finish_reason)},
                        {"matched_stop", choice.matched_stop}}});
  return j;
}

Json UsageChunkJson(const ResponseMeta& meta, const std::string& object,
                    const Usage& usage) {
  Json j = Envelope(meta, object.c_str());
  j["choices"] = Json::array();
  j["usage"] = UsageJson(usage);
  return j;
}

std::string DumpCompact(const Json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false,
                    Json::error_handler_t::replace);
}

std::string SseEvent(const Json& data) {
  return "data: " + DumpCompact(data) + "\n\n";
}

std::string SseDone() { return "data: [DONE]\n\n"; }

std::string SseError(const ApiError& error) { return SseEvent(error.ToJson()); }

Json ModelCardJson(const ModelCard& m) {
  Json card = {{"id", m.id},
               {"object", "model"},
               {"created", m.created},
               {"owned_by", "tessera"},
               {"root", m.root.empty() ? m.id : m.root}};
  if (m.max_model_len > 0) card["max_model_len"] = m.max_model_len;
  return card;
}

Json ModelListJson(const std::vector<ModelCard>& models) {
  Json data = Json::array();
  for (const ModelCard& m : models) data.push_back(ModelCardJson(m));
  return Json{{"object", "list"}, {"data", std::move(data)}};
}

}  // namespace tessera::server
