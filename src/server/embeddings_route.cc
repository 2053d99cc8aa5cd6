// POST /v1/embeddings: each input tokenized as the model's tokenizer does
// (special tokens added: Qwen3-Embedding's post-processor appends
// <|endoftext|>, whose hidden state is the one pooled), one engine request
// per input, batched by the scheduler; the answer once all are pooled.
#include <fmt/format.h>

#include "server/embeddings_protocol.h"
#include "server/engine_bridge.h"
#include "server/http_util.h"
#include "server/routes.h"
#include "server/stream_pump.h"

namespace tessera::server {

void HandleEmbeddings(ServingContext& ctx, const HttpRequest& req,
                      HttpResponse& res) {
  if (auto e = ctx.CheckServesEmbeddings()) return SendError(res, *e);
  Json body;
  if (!ParseJsonBody(req, res, &body)) return;
  auto r = std::make_shared<EmbeddingRequest>();
  if (auto e = ParseEmbeddingRequest(body, ctx.options.limits, r.get())) {
    return SendError(res, *e);
  }
  if (auto e = ctx.CheckModel(r->model)) return SendError(res, *e);
  const int64_t hidden = ctx.engine->runner().config().hidden_size;
  if (r->dimensions && *r->dimensions > hidden) {
    return SendError(
        res, BadRequest(fmt::format("'dimensions' is {} but this model's "
                                    "embeddings have {}; ask for at most {}",
                                    *r->dimensions, hidden, hidden),
                        "dimensions"));
  }
  for (const CompletionPrompt& in : r->inputs) {
    if (in.is_token_ids) continue;
    if (auto e = ctx.CheckPromptBytes(in.text.size(), "input")) {
      return SendError(res, *e);
    }
  }
  const std::string id = NewResponseId("embd-");
  std::vector<std::vector<engine::EngineRequest>> groups;
  for (size_t i = 0; i < r->inputs.size(); ++i) {
    const CompletionPrompt& in = r->inputs[i];
    engine::EngineRequest er;
    er.rid = r->inputs.size() == 1 ? id : fmt::format("{}-{}", id, i);
    er.prompt_ids =
        in.is_token_ids ? in.token_ids : ctx.tokenizer().Encode(in.text, true);
    groups.push_back({std::move(er)});
  }
  auto streams = std::make_shared<StreamSet>();
  if (auto e = SubmitAll(*ctx.engine, groups, streams.get())) {
    return SendError(res, *e);
  }
  auto last = std::make_shared<std::vector<engine::RequestOutput>>(streams->size());
  auto on_event = [last](StreamSet::Event& ev) {
    if (ev.output.finished) (*last)[ev.index] = std::move(ev.output);
  };
  const bool normalize = ctx.engine->options().pooling->normalize;
  auto on_done = [last, r, normalize, &ctx](HttpResponse& out) {
    std::vector<std::vector<float>> vectors;
    int64_t prompt_tokens = 0;
    for (engine::RequestOutput& o : *last) {
      if (o.finish.kind == engine::FinishReason::Kind::kAbort) {
        return SendError(out, AbortError(o.finish));
      }
      if (auto e = ReduceDimensions(r->dimensions, normalize, &o.embedding)) {
        return SendError(out, *e);
      }
      prompt_tokens += o.prompt_tokens;
      vectors.push_back(std::move(o.embedding));
    }
    SendJson(out, EmbeddingResponseJson(ctx.options.served_model_name, vectors,
                                        r->base64, prompt_tokens));
  };
  DeferResponse(res, streams, std::move(on_event), std::move(on_done));
}

}  // namespace tessera::server
