// POST /v1/completions: prompts (text, token ids, or a list of either) with
// n choices each, echo, logprobs, streaming with include_usage. echo with
// logprobs scores the prompt too (its tokens' logprobs lead the choice's,
// the first one null, as OpenAI's legacy API and lm-evaluation-harness
// expect); max_tokens 0 with echo returns the prompt alone.
#include <fmt/format.h>

#include <ctime>

#include "base/utf8.h"
#include "server/engine_bridge.h"
#include "server/http_util.h"
#include "server/native_protocol.h"
#include "server/routes.h"
#include "server/stream_pump.h"

namespace tessera::server {
namespace {

struct PreparedCompletion {
  CompletionRequest request;
  std::vector<std::vector<int32_t>> prompt_ids;  // per prompt
  std::vector<std::string> prompt_texts;         // per prompt (for echo)
  ResponseMeta meta;
};

}  // namespace

void HandleCompletions(ServingContext& ctx, const HttpRequest& req,
                       HttpResponse& res) {
  if (auto e = ctx.CheckServesGeneration()) return SendError(res, *e);
  Json body;
  if (!ParseJsonBody(req, res, &body)) return;
  auto p = std::make_shared<PreparedCompletion>();
  if (auto e = ParseCompletionRequest(body, ctx.options.limits, &p->request)) {
    return SendError(res, *e);
  }
  if (auto e = ctx.CheckModel(p->request.model)) return SendError(res, *e);
  if (auto e = ctx.grammars.Compile(&p->request.sampling)) {
    return SendError(res, *e);
  }
  const CompletionRequest& r = p->request;
  for (const CompletionPrompt& prompt : r.prompts) {
    if (!prompt.is_token_ids) {
      if (auto e = ctx.CheckPromptBytes(prompt.text.size(), "prompt")) {
        return SendError(res, *e);
      }
    }
  }
  for (const CompletionPrompt& prompt : r.prompts) {
    if (prompt.is_token_ids) {
      p->prompt_ids.push_back(prompt.token_ids);
      p->prompt_texts.push_back(
          r.echo ? ctx.tokenizer().Decode(prompt.token_ids, false) : "");
    } else {
      p->prompt_ids.push_back(ctx.tokenizer().Encode(prompt.text, true));
      p->prompt_texts.push_back(prompt.text);
    }
  }
  p->meta.id = NewResponseId("cmpl-");
  p->meta.created = static_cast<int64_t>(std::time(nullptr));
  p->meta.model = ctx.options.served_model_name;
  p->meta.system_fingerprint = ctx.options.system_fingerprint;
  const int32_t top = r.logprobs ? *r.logprobs : -1;
  // Prompt logprobs: echo with logprobs (and echo with max_tokens 0, which
  // the engine runs as a scored prompt).
  const bool prompt_only = r.sampling.max_tokens && *r.sampling.max_tokens == 0;
  const int32_t prompt_top =
      r.echo && (r.logprobs || prompt_only) ? std::max(top, 0) : -1;
  std::vector<std::vector<engine::EngineRequest>> groups;
  for (size_t i = 0; i < p->prompt_ids.size(); ++i) {
    groups.push_back(BuildEngineRequests(
        r.sampling, p->prompt_ids[i], top,
        p->prompt_ids.size() == 1 ? p->meta.id
                                  : fmt::format("{}-p{}", p->meta.id, i),
        prompt_top));
  }
  // Whether the answer shows the prompt's logprobs.
  const bool echo_logprobs = r.echo && r.logprobs.has_value();
  auto streams = std::make_shared<StreamSet>();
  if (auto e = SubmitAll(*ctx.engine, groups, streams.get())) {
    return SendError(res, *e);
  }
  const size_t n = static_cast<size_t>(r.sampling.n);
  auto prompt_of = [n](size_t choice) { return choice / n; };

  if (!r.stream) {
    struct Collected {
      std::vector<CompletionChoice> choices;
      std::vector<std::vector<TokenLogprob>> lps;
      std::vector<engine::RequestOutput> last;
    };
    auto c = std::make_shared<Collected>();
    c->choices.resize(streams->size());
    c->lps.resize(streams->size());
    c->last.resize(streams->size());
    auto on_event = [c, &ctx, p, prompt_of, echo_logprobs](StreamSet::Event& ev) {
      if (echo_logprobs && !ev.output.prompt_logprobs.empty()) {
        c->lps[ev.index] = PromptTokenLogprobs(
            p->prompt_ids[prompt_of(ev.index)], ev.output.prompt_logprobs,
            ctx.tokenizer());
      }
      c->choices[ev.index].text += ev.output.text;
      for (const auto& lp : ev.output.logprobs) {
        c->lps[ev.index].push_back(ToTokenLogprob(lp, ctx.tokenizer()));
      }
      if (ev.output.finished) c->last[ev.index] = std::move(ev.output);
    };
    auto on_done = [c, p, n, prompt_of, echo_logprobs](HttpResponse& out) {
      const CompletionRequest& r = p->request;
      Usage usage;
      for (size_t i = 0; i < c->choices.size(); ++i) {
        const engine::RequestOutput& o = c->last[i];
        if (o.finish.kind == engine::FinishReason::Kind::kAbort) {
          return SendError(out, AbortError(o.finish));
        }
        CompletionChoice& choice = c->choices[i];
        const std::string& prompt_text = p->prompt_texts[prompt_of(i)];
        choice.index = static_cast<int32_t>(i);
        if (r.echo) choice.text = prompt_text + choice.text;
        choice.finish_reason = OpenAiFinishReason(o.finish);
        choice.matched_stop = MatchedStopJson(o.finish);
        if (r.logprobs) {
          // With echo the prompt's tokens lead the list: offsets from 0.
          choice.logprobs = CompletionLogprobsJson(
              c->lps[i], r.echo && !echo_logprobs ? CountUtf8Chars(prompt_text) : 0);
        }
        usage.completion_tokens += o.completion_tokens;
        if (i % n == 0) {
          usage.prompt_tokens += o.prompt_tokens;
          usage.cached_tokens += o.cached_tokens;
        }
      }
      SendJson(out, CompletionResponseJson(p->meta, c->choices, usage));
    };
    return DeferResponse(res, streams, std::move(on_event),
                         std::move(on_done));
  }

  struct StreamState {
    std::vector<int64_t> offsets;  // text_offset per choice
    std::vector<bool> echoed;      // echo_logprobs: the prompt chunk is out
    Usage usage;
  };
  auto st = std::make_shared<StreamState>();
  st->offsets.assign(streams->size(), 0);
  st->echoed.assign(streams->size(), false);
  SseHandlers h;
  h.on_start = [p, st, prompt_of, echo_logprobs](SseWriter& out) {
    // With logprobs the echo waits for the prompt's scores (first output).
    if (!p->request.echo || echo_logprobs) return;
    for (size_t i = 0; i < st->offsets.size(); ++i) {
      CompletionChoice c;
      c.index = static_cast<int32_t>(i);
      c.text = p->prompt_texts[prompt_of(i)];
      st->offsets[i] = CountUtf8Chars(c.text);
      out.Write(SseEvent(CompletionChunkJson(p->meta, c)));
    }
  };
  h.on_event = [p, st, n, &ctx, prompt_of, echo_logprobs](
                   SseWriter& out, StreamSet::Event& ev) {
    const engine::RequestOutput& o = ev.output;
    if (echo_logprobs && !st->echoed[ev.index]) {
      st->echoed[ev.index] = true;
      CompletionChoice e;
      e.index = static_cast<int32_t>(ev.index);
      e.text = p->prompt_texts[prompt_of(ev.index)];
      const std::vector<TokenLogprob> lps = PromptTokenLogprobs(
          p->prompt_ids[prompt_of(ev.index)], o.prompt_logprobs, ctx.tokenizer());
      e.logprobs = CompletionLogprobsJson(lps, 0);
      int64_t chars = 0;
      for (const TokenLogprob& t : lps) chars += CountUtf8Chars(t.token);
      st->offsets[ev.index] = chars;
      out.Write(SseEvent(CompletionChunkJson(p->meta, e)));
    }
    CompletionChoice c;
    c.index = static_cast<int32_t>(ev.index);
    c.text = o.text;
    if (p->request.logprobs && !o.logprobs.empty()) {
      std::vector<TokenLogprob> lps;
      for (const auto& lp : o.logprobs) {
        lps.push_back(ToTokenLogprob(lp, ctx.tokenizer()));
      }
      c.logprobs = CompletionLogprobsJson(lps, st->offsets[ev.index]);
    }
    st->offsets[ev.index] += CountUtf8Chars(o.text);
    if (o.finished) {
      c.finish_reason = OpenAiFinishReason(o.finish);
      c.matched_stop = MatchedStopJson(o.finish);
      st->usage.completion_tokens += o.completion_tokens;
      if (ev.index % n == 0) {
        st->usage.prompt_tokens += o.prompt_tokens;
        st->usage.cached_tokens += o.cached_tokens;
      }
    }
    // One chunk per sampled token (its text may be held back: ""), so
    // clients can time every token.
    if (c.text.empty() && !o.finished && o.token_ids.empty()) return;
    out.Write(SseEvent(CompletionChunkJson(p->meta, c)));
  };
  h.on_end = [p, st](SseWriter& out) {
    if (p->request.include_usage) {
      out.Write(
          SseEvent(UsageChunkJson(p->meta, "text_completion", st->usage)));
    }
    out.Write(SseDone());
  };
  StartStreamingResponse(res, streams, std::move(h));
}

}  // namespace tessera::server
