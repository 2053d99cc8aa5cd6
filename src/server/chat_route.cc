// POST /v1/chat/completions: messages rendered by the model's chat template,
// n choices, logprobs, streaming; with --reasoning-parser the <think> block
// becomes reasoning_content, with --tool-call-parser (and tools in the
// request) <tool_call> blocks become tool_calls, streamed as deltas.
#include <fmt/format.h>

#include <cctype>
#include <ctime>

#include "parsers/reasoning_parser.h"
#include "parsers/tool_call_parser.h"
#include "grammar/tool_call_ebnf.h"
#include "server/engine_bridge.h"
#include "server/http_util.h"
#include "server/native_protocol.h"
#include "server/routes.h"
#include "server/stream_pump.h"

namespace tessera::server {
namespace {

struct PreparedChat {
  ChatRequest request;
  ResponseMeta meta;
  std::vector<std::string> tool_names;
  bool parse_reasoning = false;
  bool parse_tools = false;
};

// The output pipeline of one choice: reasoning split, then tool calls.
class ChoiceParsers {
 public:
  static StatusOr<ChoiceParsers> Create(const ServerOptions& options,
                                        const PreparedChat& chat) {
    ChoiceParsers p;
    if (chat.parse_reasoning) {
      TSR_ASSIGN_OR_RETURN(p.reasoning_, parsers::ReasoningParser::Create(
                                             options.reasoning_parser, false));
    }
    if (chat.parse_tools) {
      TSR_ASSIGN_OR_RETURN(
          p.tools_, parsers::ToolCallParser::Create(options.tool_call_parser,
                                                    chat.tool_names));
    }
    return p;
  }

  // Streams `text` (empty with `finish` to flush) into a delta.
  void Push(const std::string& text, bool finish, ChatDelta& delta) {
    parsers::ReasoningDelta r;
    if (reasoning_) {
      r = reasoning_->Push(text);
      if (finish) {
        parsers::ReasoningDelta tail = reasoning_->Finish();
        r.reasoning_delta += tail.reasoning_delta;
        r.content_delta += tail.content_delta;
      }
    } else {
      r.content_delta = text;
    }
    if (!r.reasoning_delta.empty()) delta.reasoning_content = r.reasoning_delta;
    std::string content = std::move(r.content_delta);
    if (tools_) {
      parsers::ToolCallStreamResult t = tools_->Push(content);
      if (finish) {
        parsers::ToolCallStreamResult tail = tools_->Finish();
        t.normal_text_delta += tail.normal_text_delta;
        t.deltas.insert(t.deltas.end(), tail.deltas.begin(), tail.deltas.end());
      }
      content = std::move(t.normal_text_delta);
      for (auto& d : t.deltas) {
        delta.tool_call_chunks.push_back(
            {d.index, d.id, d.name, std::move(d.arguments_delta)});
      }
    }
    if (!content.empty()) delta.content = std::move(content);
  }

  // The whole output at once (non-streaming).
  void Full(const std::string& text, ChatChoice& choice) {
    std::string content = text;
    if (reasoning_) {
      parsers::ReasoningParseResult r = reasoning_->ParseFull(text);
      choice.reasoning_content = r.reasoning;
      content = std::move(r.content);
    }
    if (tools_) {
      parsers::ToolCallParseResult t = tools_->ParseFull(content);
      content = std::move(t.normal_text);
      for (auto& c : t.calls) {
        choice.tool_calls.push_back(
            ToolCall{c.id, "function", c.name, c.arguments});
      }
    }
    if (choice.tool_calls.empty() || !content.empty()) {
      choice.content = std::move(content);
    }
  }

  bool has_calls() const { return tools_ && tools_->has_calls(); }

 private:
  std::unique_ptr<parsers::ReasoningParser> reasoning_;
  std::unique_ptr<parsers::ToolCallParser> tools_;
};

std::string ChatFinishReason(const engine::FinishReason& finish,
                             bool has_calls) {
  if (has_calls && finish.kind == engine::FinishReason::Kind::kStop) {
    return "tool_calls";
  }
  return OpenAiFinishReason(finish);
}

std::vector<TokenLogprob> Logprobs(const engine::RequestOutput& o,
                                   const Tokenizer& tokenizer) {
  std::vector<TokenLogprob> out;
  for (const auto& lp : o.logprobs)
    out.push_back(ToTokenLogprob(lp, tokenizer));
  return out;
}

// tool_choice "required" or a named function: the output is constrained
// to calls in the tool-call parser's format, their arguments to each
// function's parameter schema (grammar/tool_call_ebnf.h).
MaybeApiError ForceToolCall(const ServingContext& ctx, ChatRequest* r) {
  const bool required =
      r->tool_choice.is_string() && r->tool_choice == "required";
  if (!required && !r->tool_choice.is_object()) return std::nullopt;
  if (ctx.options.tool_call_parser.empty()) {
    return BadRequest(
        "forcing a tool call needs a tool-call parser: start the server "
        "with --tool-call-parser (e.g. qwen)",
        "tool_choice");
  }
  if (r->sampling.constraint) {
    return BadRequest(fmt::format("tool_choice {} already constrains the "
                                  "output; drop '{}'",
                                  r->tool_choice.dump(),
                                  r->sampling.constraint->param),
                      r->sampling.constraint->param);
  }
  const std::string only =
      required ? "" : r->tool_choice["function"]["name"].get<std::string>();
  auto ebnf = grammar::ForcedToolCallEbnf(r->tools, only,
                                          r->parallel_tool_calls);
  if (!ebnf.ok()) {
    return BadRequest(ebnf.status().message(), "tools");
  }
  r->sampling.constraint =
      ConstraintSpec{ConstraintSpec::Kind::kEbnf, *ebnf, "tools"};
  return std::nullopt;
}

}  // namespace

void HandleChatCompletions(ServingContext& ctx, const HttpRequest& req,
                           HttpResponse& res) {
  if (auto e = ctx.CheckServesGeneration()) return SendError(res, *e);
  Json body;
  if (!ParseJsonBody(req, res, &body)) return;
  auto p = std::make_shared<PreparedChat>();
  if (auto e = ParseChatRequest(body, ctx.options.limits, &p->request)) {
    return SendError(res, *e);
  }
  if (auto e = ctx.CheckModel(p->request.model)) return SendError(res, *e);
  if (auto e = ForceToolCall(ctx, &p->request)) return SendError(res, *e);
  if (auto e = ctx.grammars.Compile(&p->request.sampling)) {
    return SendError(res, *e);
  }
  const ChatRequest& r = p->request;
  if (r.tools.is_array()) {
    for (const Json& t : r.tools) {
      p->tool_names.push_back(t["function"]["name"].get<std::string>());
    }
  }
  p->parse_reasoning =
      !ctx.options.reasoning_parser.empty() && r.separate_reasoning;
  p->parse_tools = !ctx.options.tool_call_parser.empty() &&
                   r.tools.is_array() && !r.tools.empty() &&
                   !(r.tool_choice.is_string() && r.tool_choice == "none");

  StatusOr<std::string> rendered = ctx.prompts->RenderChat(
      ChatMessagesToJson(r.messages), r.tools, true, r.chat_template_kwargs);
  if (!rendered.ok()) {
    return SendError(res, BadRequest("the chat template failed on these "
                                     "messages: " +
                                         rendered.status().message(),
                                     "messages"));
  }
  if (auto e = ctx.CheckPromptBytes(rendered->size(), "messages")) {
    return SendError(res, *e);
  }
  const std::vector<int32_t> ids = ctx.tokenizer().Encode(*rendered, false);
  p->meta.id = NewResponseId("chatcmpl-");
  p->meta.created = static_cast<int64_t>(std::time(nullptr));
  p->meta.model = ctx.options.served_model_name;
  p->meta.system_fingerprint = ctx.options.system_fingerprint;
  const int32_t top = r.logprobs ? r.top_logprobs : -1;
  std::vector<engine::EngineRequest> requests =
      BuildEngineRequests(r.sampling, ids, top, p->meta.id);
  if (r.sampling.grammar != nullptr && !ctx.options.reasoning_parser.empty()) {
    // Structured output constrains the answer of a reasoning model, not
    // its thinking (SGLang does the same with a reasoning parser).
    const auto start = ctx.tokenizer().TokenToId("<think>");
    const auto end = ctx.tokenizer().TokenToId("</think>");
    if (start && end) {
      // A template that opens the block (the prompt ends inside it).
      std::string_view tail(*rendered);
      while (!tail.empty() && std::isspace(static_cast<unsigned char>(tail.back()))) {
        tail.remove_suffix(1);
      }
      const bool opened = tail.ends_with("<think>");
      for (engine::EngineRequest& er : requests) {
        er.grammar_after_reasoning =
            engine::EngineRequest::ReasoningTokens{*start, *end, !opened};
      }
    }
  }
  auto streams = std::make_shared<StreamSet>();
  if (auto e = SubmitAll(*ctx.engine, {std::move(requests)}, streams.get())) {
    return SendError(res, *e);
  }
  std::vector<ChoiceParsers> parsers;
  for (size_t i = 0; i < streams->size(); ++i) {
    auto made = ChoiceParsers::Create(ctx.options, *p);
    if (!made.ok()) {
      streams->CancelAll(engine::AbortCause::kError, "server misconfiguration");
      return SendError(res, InternalServerError(made.status().message()));
    }
    parsers.push_back(std::move(*made));
  }

  if (!r.stream) {
    struct Collected {
      std::vector<std::string> texts;
      std::vector<std::vector<TokenLogprob>> lps;
      std::vector<engine::RequestOutput> last;
      std::vector<ChoiceParsers> parsers;
    };
    auto c = std::make_shared<Collected>();
    c->texts.resize(streams->size());
    c->lps.resize(streams->size());
    c->last.resize(streams->size());
    c->parsers = std::move(parsers);
    auto on_event = [c, &ctx](StreamSet::Event& ev) {
      c->texts[ev.index] += ev.output.text;
      auto l = Logprobs(ev.output, ctx.tokenizer());
      c->lps[ev.index].insert(c->lps[ev.index].end(), l.begin(), l.end());
      if (ev.output.finished) c->last[ev.index] = std::move(ev.output);
    };
    auto on_done = [c, p](HttpResponse& out) {
      std::vector<ChatChoice> choices(c->texts.size());
      Usage usage;
      for (size_t i = 0; i < choices.size(); ++i) {
        const engine::RequestOutput& o = c->last[i];
        if (o.finish.kind == engine::FinishReason::Kind::kAbort) {
          return SendError(out, AbortError(o.finish));
        }
        choices[i].index = static_cast<int32_t>(i);
        c->parsers[i].Full(c->texts[i], choices[i]);
        choices[i].finish_reason =
            ChatFinishReason(o.finish, !choices[i].tool_calls.empty());
        choices[i].matched_stop = MatchedStopJson(o.finish);
        if (p->request.logprobs) {
          choices[i].logprobs = ChatLogprobsJson(c->lps[i]);
        }
        usage.completion_tokens += o.completion_tokens;
        if (i == 0) {
          usage.prompt_tokens = o.prompt_tokens;
          usage.cached_tokens = o.cached_tokens;
        }
      }
      SendJson(out, ChatResponseJson(p->meta, choices, usage));
    };
    return DeferResponse(res, streams, std::move(on_event),
                         std::move(on_done));
  }

  struct StreamState {
    std::vector<ChoiceParsers> parsers;  // one per choice
    Usage usage;
  };
  auto st = std::make_shared<StreamState>();
  st->parsers = std::move(parsers);
  SseHandlers h;
  h.on_start = [p, st](SseWriter& out) {
    for (size_t i = 0; i < st->parsers.size(); ++i) {
      ChatDelta first;
      first.index = static_cast<int32_t>(i);
      first.role = true;
      first.content = "";
      out.Write(SseEvent(ChatChunkJson(p->meta, first)));
    }
  };
  h.on_event = [p, st, &ctx](SseWriter& out, StreamSet::Event& ev) {
    const engine::RequestOutput& o = ev.output;
    ChatDelta d;
    d.index = static_cast<int32_t>(ev.index);
    st->parsers[ev.index].Push(o.text, o.finished, d);
    if (p->request.logprobs && !o.logprobs.empty()) {
      d.logprobs = ChatLogprobsJson(Logprobs(o, ctx.tokenizer()));
    }
    if (o.finished) {
      d.finish_reason =
          ChatFinishReason(o.finish, st->parsers[ev.index].has_calls());
      d.matched_stop = MatchedStopJson(o.finish);
      st->usage.completion_tokens += o.completion_tokens;
      if (ev.index == 0) {
        st->usage.prompt_tokens = o.prompt_tokens;
        st->usage.cached_tokens = o.cached_tokens;
      }
    }
    const bool empty = !d.content && !d.reasoning_content &&
                       d.tool_call_chunks.empty() && d.finish_reason.empty() &&
                       d.logprobs.is_null();
    if (!empty) out.Write(SseEvent(ChatChunkJson(p->meta, d)));
  };
  h.on_end = [p, st](SseWriter& out) {
    if (p->request.include_usage) {
      out.Write(SseEvent(
          UsageChunkJson(p->meta, "chat.completion.chunk", st->usage)));
    }
    out.Write(SseDone());
  };
  StartStreamingResponse(res, streams, std::move(h));
}

}  // namespace tessera::server
