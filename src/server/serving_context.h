// ServingContext: what every HTTP route handler shares — the engine, the
// prompt tools (tokenizer + chat template), the server's options and
// metrics, and the ready / draining flags.
//
// Start-up order: the HTTP server listens before the model is loaded (so
// /health can answer 503 while it loads); the pointers are set once
// everything is built, and only then `ready` flips to true (release; the
// HTTP layer reads it with acquire before any handler runs, and answers 503
// while it is false). After that the pointers never change.
//
// Thread-safety: the engine, the prompt tools and the metrics are
// thread-safe; options are immutable after start; the flags are atomic.
#ifndef TESSERA_SERVER_SERVING_CONTEXT_H_
#define TESSERA_SERVER_SERVING_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "prompt/prompt_tools.h"
#include "engine/engine.h"
#include "server/api_error.h"
#include "server/grammar_cache.h"
#include "server/openai_request.h"

namespace tessera::metrics {
class Registry;
class ServingMetrics;
}  // namespace tessera::metrics

namespace tessera::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string served_model_name;  // the id clients send as "model"
  std::string model_path;         // where the weights came from
  // OpenAI's system_fingerprint on every completion: "fp_" + 10 hex digits
  // of a hash over Tessera's version and the serving configuration (model,
  // dtype, quantization, plugin, tensor parallelism). Empty: null.
  std::string system_fingerprint;
  std::string api_key;            // empty: no authentication
  std::string reasoning_parser;   // "" or a ReasoningParserNames() entry
  std::string tool_call_parser;   // "" or a ToolCallParserNames() entry
  int http_threads = 16;          // route handler threads
  int max_connections = 8192;     // open connections; more get 503
  int http_read_timeout = 10;     // seconds for a request's header
  int http_keep_alive_timeout = 5;  // idle seconds between requests
  // CORS (server/cors.h): origins allowed to call the API from a browser;
  // "*" for any. Empty: CORS off.
  std::vector<std::string> allowed_origins;
  // --grammar-backend (server/grammar_cache.h).
  std::string grammar_backend = "tessera";
  ProtocolLimits limits;
  // Extra facts for /server_info (plugin, device, dtype, flags).
  Json info = Json::object();
};

struct ServingContext {
  explicit ServingContext(const ServerOptions& server_options)
      : options(server_options) {}

  const ServerOptions& options;
  engine::Engine* engine = nullptr;
  prompt::PromptTools* prompts = nullptr;
  metrics::Registry* registry = nullptr;
  metrics::ServingMetrics* metrics = nullptr;
  // Structured-output grammars, compiled once per distinct constraint.
  GrammarCache grammars{options.grammar_backend};
  std::atomic<bool> ready{false};     // model loaded and warmed up
  std::atomic<bool> draining{false};  // SIGTERM received

  // /metrics: the engine's retraction total already added to the counter.
  std::mutex metrics_mu;
  int64_t retractions_reported = 0;  // guarded by metrics_mu

  const Tokenizer& tokenizer() const { return prompts->tokenizer(); }
  // nullopt when `model` is absent or names this server's model.
  MaybeApiError CheckModel(const std::optional<std::string>& model) const;
  // A 400 on `param` when a text of `bytes` bytes cannot encode to few
  // enough tokens to fit the context (see
  // Tokenizer::max_input_bytes_per_token): checked before tokenizing, so a
  // 50 MB prompt costs nothing.
  MaybeApiError CheckPromptBytes(size_t bytes, const std::string& param) const;
  // An embedding server (--is-embedding) serves /v1/embeddings and no
  // generation route; a generation server the reverse. A 400 saying which
  // server to start when the route does not match this one.
  MaybeApiError CheckServesGeneration() const;
  MaybeApiError CheckServesEmbeddings() const;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_SERVING_CONTEXT_H_
