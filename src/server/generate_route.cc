// POST /generate (SGLang's native endpoint): text or input_ids, one or a
// batch, sampling_params, optional streaming of cumulative text as SGLang
// does ({"text": all so far, "output_ids", "meta_info"}, then [DONE]).
#include <fmt/format.h>

#include "server/engine_bridge.h"
#include "server/http_util.h"
#include "server/native_protocol.h"
#include "server/openai_response.h"
#include "server/routes.h"
#include "server/stream_pump.h"

namespace tessera::server {
namespace {

struct GenerateState {
  GenerateRequest request;
  std::vector<GenerateResult> results;  // one per choice
  std::vector<std::vector<int32_t>> prompt_ids;  // per choice
};

// SGLang's logprob entry: [logprob | null, id, text | null].
Json LogprobEntry(std::optional<float> logprob, int32_t id, bool with_text,
                  const Tokenizer& tokenizer) {
  return Json::array(
      {logprob ? Json(*logprob) : Json(nullptr), id,
       with_text ? Json(tokenizer.Decode(std::span<const int32_t>(&id, 1), false))
                 : Json(nullptr)});
}

Json TopEntries(const engine::TokenLogprobs& lp, bool with_text,
                const Tokenizer& tokenizer) {
  Json out = Json::array();
  for (const auto& [id, logprob] : lp.top) {
    out.push_back(LogprobEntry(logprob, id, with_text, tokenizer));
  }
  return out;
}

// The logprobs of one output, appended as SGLang's meta_info lists.
void ApplyLogprobs(const GenerateRequest& r, const std::vector<int32_t>& prompt,
                   const engine::RequestOutput& o, const Tokenizer& tokenizer,
                   GenerateResult& g) {
  if (!r.return_logprob) return;
  g.has_logprobs = true;
  g.has_top_logprobs = r.top_logprobs_num > 0;
  const bool text = r.return_text_in_logprobs;
  if (r.logprob_start_len >= 0 && !o.prompt_logprobs.empty()) {
    // Position p's entry is prompt_logprobs[p - 1]; position 0 has none.
    for (int64_t p = r.logprob_start_len;
         p < static_cast<int64_t>(prompt.size()); ++p) {
      if (p == 0) {
        g.input_token_logprobs.push_back(
            LogprobEntry(std::nullopt, prompt[0], text, tokenizer));
        g.input_top_logprobs.push_back(nullptr);
        continue;
      }
      const engine::TokenLogprobs& lp = o.prompt_logprobs[p - 1];
      g.input_token_logprobs.push_back(
          LogprobEntry(lp.logprob, lp.id, text, tokenizer));
      g.input_top_logprobs.push_back(TopEntries(lp, text, tokenizer));
    }
  }
  for (const engine::TokenLogprobs& lp : o.logprobs) {
    g.output_token_logprobs.push_back(
        LogprobEntry(lp.logprob, lp.id, text, tokenizer));
    g.output_top_logprobs.push_back(TopEntries(lp, text, tokenizer));
  }
}

void Apply(GenerateResult& result, const engine::RequestOutput& o) {
  result.text += o.text;
  result.output_ids.insert(result.output_ids.end(), o.token_ids.begin(),
                           o.token_ids.end());
  result.prompt_tokens = o.prompt_tokens;
  result.completion_tokens = o.completion_tokens;
  result.cached_tokens = o.cached_tokens;
  if (o.finished) result.finish_reason = o.finish;
}

}  // namespace

void HandleGenerate(ServingContext& ctx, const HttpRequest& req,
                    HttpResponse& res) {
  if (auto e = ctx.CheckServesGeneration()) return SendError(res, *e);
  Json body;
  if (!ParseJsonBody(req, res, &body)) return;
  auto s = std::make_shared<GenerateState>();
  if (auto e = ParseGenerateRequest(body, ctx.options.limits, &s->request)) {
    return SendError(res, *e);
  }
  if (auto e = ctx.grammars.Compile(&s->request.sampling)) {
    // The field sits in sampling_params on this route.
    e->param = "sampling_params." + e->param;
    return SendError(res, *e);
  }
  const GenerateRequest& r = s->request;
  const std::string base = r.rid ? *r.rid : NewResponseId("");
  for (const CompletionPrompt& prompt : r.prompts) {
    if (prompt.is_token_ids) continue;
    if (auto e = ctx.CheckPromptBytes(prompt.text.size(), "text")) {
      return SendError(res, *e);
    }
  }
  std::vector<std::vector<engine::EngineRequest>> groups;
  for (size_t i = 0; i < r.prompts.size(); ++i) {
    const CompletionPrompt& prompt = r.prompts[i];
    std::vector<int32_t> ids = prompt.is_token_ids
                                   ? prompt.token_ids
                                   : ctx.tokenizer().Encode(prompt.text, true);
    // Prompt logprobs are scored from position 0 (a cached prefix has no
    // logits) and shown from logprob_start_len.
    groups.push_back(BuildEngineRequests(
        r.sampling, ids, r.return_logprob ? r.top_logprobs_num : -1,
        r.prompts.size() == 1 ? base : fmt::format("{}-{}", base, i),
        r.return_logprob && r.logprob_start_len >= 0 &&
                r.logprob_start_len < static_cast<int64_t>(ids.size())
            ? r.top_logprobs_num
            : -1));
    for (int32_t c = 0; c < r.sampling.n; ++c) s->prompt_ids.push_back(ids);
  }
  auto streams = std::make_shared<StreamSet>();
  if (auto e = SubmitAll(*ctx.engine, groups, streams.get())) {
    return SendError(res, *e);
  }
  for (const auto& group : groups) {
    for (const auto& er : group) {
      GenerateResult g;
      g.id = er.rid;
      s->results.push_back(std::move(g));
    }
  }
  const bool list = r.batched || s->results.size() > 1;

  if (!r.stream) {
    auto on_event = [s, &ctx](StreamSet::Event& ev) {
      ApplyLogprobs(s->request, s->prompt_ids[ev.index], ev.output,
                    ctx.tokenizer(), s->results[ev.index]);
      Apply(s->results[ev.index], ev.output);
    };
    auto on_done = [s, list](HttpResponse& res) {
      if (!list) return SendJson(res, GenerateResultJson(s->results[0]));
      Json out = Json::array();
      for (const auto& g : s->results) out.push_back(GenerateResultJson(g));
      SendJson(res, out);
    };
    return DeferResponse(res, streams, std::move(on_event),
                         std::move(on_done));
  }
  SseHandlers h;
  h.on_event = [s, list, &ctx](SseWriter& out, StreamSet::Event& ev) {
    GenerateResult& g = s->results[ev.index];
    ApplyLogprobs(s->request, s->prompt_ids[ev.index], ev.output,
                  ctx.tokenizer(), g);
    Apply(g, ev.output);
    Json j = GenerateResultJson(g);
    if (list) j["index"] = ev.index;
    out.Write(SseEvent(j));
  };
  h.on_end = [](SseWriter& out) { out.Write(SseDone()); };
  StartStreamingResponse(res, streams, std::move(h));
}

}  // namespace tessera::server
