// The small native endpoints: models, tokenize/detokenize, health, server
// info, cache flush, abort, metrics.
#include <fmt/format.h>

#include <cctype>
#include <ctime>
#include <mutex>
#include <optional>
#include <string_view>

#include "metrics/registry.h"
#include "metrics/serving_metrics.h"
#include "server/chat_page_html.h"
#include "tokenizer/byte_level.h"
#include "server/engine_bridge.h"
#include "server/http_util.h"
#include "server/native_protocol.h"
#include "server/openai_response.h"
#include "server/routes.h"
#include "server/stream_pump.h"

namespace tessera::server {

MaybeApiError ServingContext::CheckModel(
    const std::optional<std::string>& model) const {
  if (!model || *model == options.served_model_name ||
      *model == options.model_path) {
    return std::nullopt;
  }
  return ModelNotFound(*model);
}

MaybeApiError ServingContext::CheckServesGeneration() const {
  if (!engine->options().pooling) return std::nullopt;
  return BadRequest(
      "this server serves an embedding model (--is-embedding): use POST "
      "/v1/embeddings, or start a server without --is-embedding to generate "
      "text");
}

MaybeApiError ServingContext::CheckServesEmbeddings() const {
  if (engine->options().pooling) return std::nullopt;
  return BadRequest(
      "this server generates text; /v1/embeddings needs an embedding model "
      "served with --is-embedding (e.g. tessera serve --model-path "
      "Qwen/Qwen3-Embedding-0.6B --is-embedding)");
}

MaybeApiError ServingContext::CheckPromptBytes(size_t bytes,
                                               const std::string& param) const {
  const size_t context = static_cast<size_t>(engine->context_length());
  const size_t per_token = tokenizer().max_input_bytes_per_token();
  if (bytes / per_token <= context) return std::nullopt;
  return BadRequest(
      fmt::format("the prompt is {} bytes, which is more than {} tokens "
                  "however it is tokenized, and this model's maximum context "
                  "length is {} tokens; shorten it",
                  bytes, bytes / per_token, context),
      param);
}

namespace {

ModelCard ServedModelCard(ServingContext& ctx) {
  static const int64_t created = static_cast<int64_t>(std::time(nullptr));
  ModelCard card;
  card.id = ctx.options.served_model_name;
  card.root = ctx.options.model_path;
  card.created = created;
  card.max_model_len = ctx.engine->context_length();
  return card;
}

// %XX escapes decoded (a model id may hold '/' sent as %2F); nullopt when an
// escape is malformed.
std::optional<std::string> PercentDecode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out += in[i];
      continue;
    }
    const int hi = i + 2 < in.size() ? tok::HexDigit(in[i + 1]) : -1;
    const int lo = i + 2 < in.size() ? tok::HexDigit(in[i + 2]) : -1;
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

}  // namespace

void HandleChatPage(ServingContext&, const HttpRequest&, HttpResponse& res) {
  res.set_content(kChatPageHtml, "text/html; charset=utf-8");
  res.set_header("Cache-Control", "no-cache");
}

void HandleModels(ServingContext& ctx, const HttpRequest&,
                  HttpResponse& res) {
  SendJson(res, ModelListJson({ServedModelCard(ctx)}));
}

void HandleModel(ServingContext& ctx, const HttpRequest& req,
                 HttpResponse& res) {
  constexpr std::string_view kPrefix = "/v1/models/";
  std::optional<std::string> id =
      PercentDecode(std::string_view(req.path).substr(kPrefix.size()));
  if (!id) {
    return SendError(res, BadRequest("the model id in the path has a "
                                     "malformed %-escape",
                                     "model"));
  }
  if (auto e = ctx.CheckModel(*id)) return SendError(res, *e);
  SendJson(res, ModelCardJson(ServedModelCard(ctx)));
}

void HandleTokenize(ServingContext& ctx, const HttpRequest& req,
                    HttpResponse& res) {
  Json body;
  if (!ParseJsonBody(req, res, &body)) return;
  StatusOr<prompt::TokenizeRequest> parsed = prompt::ParseTokenizeRequest(body);
  if (!parsed.ok()) return SendError(res, ApiErrorFromStatus(parsed.status()));
  StatusOr<prompt::PreparedPrompt> prompt = ctx.prompts->Prepare(*parsed);
  if (!prompt.ok()) return SendError(res, ApiErrorFromStatus(prompt.status()));
  SendJson(res, prompt::TokenizeResponseJson(prompt->ids, prompt->text));
}

void HandleDetokenize(ServingContext& ctx, const HttpRequest& req,
                      HttpResponse& res) {
  Json body;
  if (!ParseJsonBody(req, res, &body)) return;
  StatusOr<prompt::DetokenizeRequest> parsed = prompt::ParseDetokenizeRequest(body);
  if (!parsed.ok()) return SendError(res, ApiErrorFromStatus(parsed.status()));
  if (Status ok = ctx.prompts->CheckTokenIds(parsed->tokens); !ok.ok()) {
    return SendError(res, ApiErrorFromStatus(ok));
  }
  SendJson(res, prompt::DetokenizeResponseJson(ctx.tokenizer().Decode(
                    parsed->tokens, parsed->skip_special_tokens)));
}

void HandleHealth(ServingContext& ctx, const HttpRequest&,
                  HttpResponse& res) {
  if (ctx.draining.load()) {
    return SendError(res, ServiceUnavailable("the server is shutting down"));
  }
  const engine::EngineStats stats = ctx.engine->Stats();
  if (!stats.failure.empty()) {
    return SendError(res, ServiceUnavailable(stats.failure));
  }
  if (!ctx.ready.load() || !stats.ready) {
    return SendError(res, ServiceUnavailable("the model is still loading"));
  }
  res.status = 200;
  res.set_content("", "text/plain");
}

void HandleHealthGenerate(ServingContext& ctx, const HttpRequest&,
                          HttpResponse& res) {
  if (ctx.draining.load()) {
    return SendError(res, ServiceUnavailable("the server is shutting down"));
  }
  engine::EngineRequest r;
  r.rid = NewResponseId("health-");
  r.prompt_ids = {0};
  r.max_new_tokens = 1;
  r.ignore_eos = true;
  auto stream = ctx.engine->Submit(std::move(r));
  if (!stream.ok()) return SendError(res, ApiErrorFromStatus(stream.status()));
  auto streams = std::make_shared<StreamSet>();
  streams->Add(*stream);
  auto last = std::make_shared<engine::RequestOutput>();
  DeferResponse(
      res, streams,
      [last](StreamSet::Event& ev) {
        if (ev.output.finished) *last = std::move(ev.output);
      },
      [last](HttpResponse& out) {
        if (last->finish.kind == engine::FinishReason::Kind::kAbort) {
          return SendError(out, AbortError(last->finish));
        }
        out.status = 200;
        out.set_content("", "text/plain");
      });
}

void HandleServerInfo(ServingContext& ctx, const HttpRequest&,
                      HttpResponse& res) {
  const engine::EngineStats st = ctx.engine->Stats();
  const engine::EngineOptions& eo = ctx.engine->options();
  Json j = ctx.options.info;
  j["served_model_name"] = ctx.options.served_model_name;
  j["model_path"] = ctx.options.model_path;
  j["context_length"] = ctx.engine->context_length();
  j["vocab_size"] = ctx.engine->vocab_size();
  j["page_size"] = ctx.engine->runner().kv_pool().page_size();
  j["max_total_num_tokens"] = st.kv_capacity_tokens;
  j["chunked_prefill_size"] = eo.chunked_prefill_size;
  j["max_running_requests"] = eo.max_running_requests;
  j["max_queued_requests"] = eo.max_queued_requests;
  j["schedule_policy"] =
      eo.policy == engine::SchedulePolicy::kLongestPrefixMatch ? "lpm" : "fcfs";
  j["disable_radix_cache"] = eo.disable_radix_cache;
  j["enable_hierarchical_cache"] = eo.hicache.enabled;
  j["reasoning_parser"] = ctx.options.reasoning_parser;
  j["tool_call_parser"] = ctx.options.tool_call_parser;
  Status integrity = ctx.engine->CheckIntegrity();
  if (eo.disagg_mode != engine::DisaggMode::kNull) {
    j["disaggregation"] = {
        {"mode", engine::DisaggModeName(eo.disagg_mode)},
        {"transfers", st.disagg_transfers_total},
        {"transfer_failures", st.disagg_transfer_failures_total},
        {"transfer_bytes", st.disagg_transfer_bytes_total},
        {"transfer_seconds", st.disagg_transfer_seconds_total},
        {"awaiting_kv", st.disagg_awaiting_kv}};
  }
  j["state"] = {{"ready", st.ready},
                {"running_requests", st.running},
                {"queued_requests", st.queued},
                {"kv_used_tokens", st.kv_used_tokens},
                {"kv_cached_tokens", st.kv_cached_tokens},
                {"kv_capacity_tokens", st.kv_capacity_tokens},
                {"cache_hit_rate", st.cache_hit_rate},
                {"retractions", st.retractions_total},
                {"requests_total", st.requests_total},
                {"aborted_requests", st.aborted_total},
                {"device_idle_fraction", st.device_idle_fraction},
                {"hicache",
                 st.hicache_enabled
                     ? Json{{"write_policy",
                             engine::WritePolicyName(eo.hicache.write_policy)},
                            {"mem_layout",
                             kv::HostLayoutName(eo.hicache.layout)},
                            {"host_capacity_tokens", st.host_capacity_tokens},
                            {"host_cached_tokens", st.host_cached_tokens},
                            {"host_hit_tokens", st.host_hit_tokens_total},
                            {"backup_bytes", st.hicache_backup_bytes_total},
                            {"load_bytes", st.hicache_load_bytes_total},
                            {"transfer_failures",
                             st.hicache_transfer_failures_total},
                            {"storage",
                             st.storage_enabled
                                 ? Json{{"backend", eo.hicache.storage.backend},
                                        {"prefetch_policy",
                                         engine::PrefetchPolicyName(
                                             eo.hicache.prefetch_policy)},
                                        {"objects", st.storage_objects},
                                        {"hit_tokens", st.storage_hit_tokens_total},
                                        {"pages_written",
                                         st.storage_pages_written_total},
                                        {"pages_read", st.storage_pages_read_total},
                                        {"failures", st.storage_failures_total},
                                        {"corrupt_pages",
                                         st.storage_corrupt_pages_total}}
                                 : Json(nullptr)}}
                     : Json(nullptr)},
                {"kv_integrity",
                 integrity.ok() ? std::string("ok") : integrity.ToString()}};
  SendJson(res, j);
}

void HandleFlushCache(ServingContext& ctx, const HttpRequest& req,
                      HttpResponse& res) {
  // POST /flush_cache: every tier; ?tier=device|host|storage: one.
  const std::string tier = QueryParam(req, "tier").value_or("");
  Status flushed = ctx.engine->FlushCache(tier);
  if (!flushed.ok()) {
    return SendError(
        res, BadRequest(flushed.message(), "tier",
                        flushed.code() == StatusCode::kInvalidArgument
                            ? "invalid_tier"
                            : "cache_in_use"));
  }
  res.status = 200;
  res.set_content(tier.empty() ? std::string("Cache flushed.\n")
                               : fmt::format("Cache tier {} flushed.\n", tier),
                  "text/plain");
}

void HandleAbortRequest(ServingContext& ctx, const HttpRequest& req,
                        HttpResponse& res) {
  Json body;
  if (!ParseJsonBody(req, res, &body)) return;
  if (!body.contains("rid") || !body["rid"].is_string()) {
    return SendError(res, BadRequest("'rid' (a string) is required", "rid"));
  }
  const std::string rid = body["rid"].get<std::string>();
  if (MaybeApiError bad = CheckRid(rid, "rid")) return SendError(res, *bad);
  if (!ctx.engine->Abort(rid)) {
    return SendError(
        res, NotFound(fmt::format("no running request has rid '{}'", rid)));
  }
  SendJson(res, Json{{"rid", rid}, {"aborted", true}});
}

void HandleMetrics(ServingContext& ctx, const HttpRequest&,
                   HttpResponse& res) {
  // Gauges are sampled from the engine's snapshot at scrape time; the
  // retraction counter follows the engine's running total.
  const engine::EngineStats st = ctx.engine->Stats();
  metrics::ServingMetrics& m = *ctx.metrics;
  m.num_running_reqs().Set(static_cast<double>(st.running));
  m.num_queue_reqs().Set(static_cast<double>(st.queued));
  m.num_used_tokens().Set(static_cast<double>(st.kv_used_tokens));
  m.token_usage().Set(st.kv_capacity_tokens > 0
                          ? double(st.kv_used_tokens) / st.kv_capacity_tokens
                          : 0.0);
  m.cache_hit_rate().Set(st.cache_hit_rate);
  m.gen_throughput().Set(st.gen_throughput);
  m.device_idle_fraction().Set(st.device_idle_fraction);
  m.max_total_num_tokens().Set(static_cast<double>(st.kv_capacity_tokens));
  {
    std::lock_guard<std::mutex> lock(ctx.metrics_mu);
    if (st.retractions_total > ctx.retractions_reported) {
      m.num_retracted_requests().Inc(
          static_cast<double>(st.retractions_total - ctx.retractions_reported));
      ctx.retractions_reported = st.retractions_total;
    }
  }
  res.status = 200;
  res.set_content(ctx.registry->RenderPrometheus(),
                  "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace tessera::server
