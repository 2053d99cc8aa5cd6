// ServingContext: what every HTTP route handler shares — the engine, the
// prompt tools (tokenizer + chat template), the server's options and
// metrics, and the draining flag set by SIGTERM.
//
// Thread-safety: the engine, the prompt tools and the metrics are
// thread-safe; options are immutable after start; `draining` is atomic.
#ifndef TESSERA_SERVER_SERVING_CONTEXT_H_
#define TESSERA_SERVER_SERVING_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "cli/generate_prompt.h"
#include "engine/engine.h"
#include "server/api_error.h"
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
  std::string api_key;            // empty: no authentication
  std::string reasoning_parser;   // "" or a ReasoningParserNames() entry
  std::string tool_call_parser;   // "" or a ToolCallParserNames() entry
  int http_threads = 512;         // connections served at once
  ProtocolLimits limits;
  // Extra facts for /server_info (plugin, device, dtype, flags).
  Json info = Json::object();
};

struct ServingContext {
  engine::Engine& engine;
  cli::PromptTools& prompts;
  const ServerOptions& options;
  metrics::Registry& registry;
  metrics::ServingMetrics& metrics;
  std::atomic<bool> draining{false};

  const Tokenizer& tokenizer() const { return prompts.tokenizer(); }
  // nullopt when `model` is absent or names this server's model.
  MaybeApiError CheckModel(const std::optional<std::string>& model) const;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_SERVING_CONTEXT_H_
