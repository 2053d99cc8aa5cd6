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
};

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
    groups.push_back(BuildEngineRequests(
        r.sampling, ids, -1,
        r.prompts.size() == 1 ? base : fmt::format("{}-{}", base, i)));
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
    auto on_event = [s](StreamSet::Event& ev) {
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
  h.on_event = [s, list](SseWriter& out, StreamSet::Event& ev) {
    GenerateResult& g = s->results[ev.index];
    Apply(g, ev.output);
    Json j = GenerateResultJson(g);
    if (list) j["index"] = ev.index;
    out.Write(SseEvent(j));
  };
  h.on_end = [](SseWriter& out) { out.Write(SseDone()); };
  StartStreamingResponse(res, streams, std::move(h));
}

}  // namespace tessera::server
