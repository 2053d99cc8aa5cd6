#include "bench/server_probe.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/bounded_json.h"

namespace tessera::bench {
namespace {

using Json = nlohmann::json;

// Probes answer at once on a live server; the limit only bounds a hung one.
constexpr double kProbeTimeoutS = 30.0;

StatusOr<Json> GetJsonObject(const Endpoint& endpoint,
                             const std::string& path) {
  TSR_ASSIGN_OR_RETURN(HttpReply reply,
                       HttpGet(endpoint, path, kProbeTimeoutS));
  if (reply.status != 200) {
    return FailedPreconditionError(
        fmt::format("GET {}{} answered HTTP {}: {}", endpoint.Url(), path,
                    reply.status, ErrorMessageFromBody(reply.body)));
  }
  auto bounded = ParseBoundedJson(reply.body);
  Json parsed = bounded.ok() ? std::move(*bounded) : Json();
  if (!parsed.is_object()) {
    return FailedPreconditionError(fmt::format(
        "GET {}{} did not answer a JSON object; is this an OpenAI-compatible "
        "server?",
        endpoint.Url(), path));
  }
  return parsed;
}

}  // namespace

StatusOr<ServerInfo> ProbeServer(const Endpoint& endpoint) {
  auto health = HttpGet(endpoint, "/health", kProbeTimeoutS);
  if (!health.ok()) {
    return UnavailableError(fmt::format(
        "no server answers at {} ({}); start one with `tessera serve "
        "--model-path DIR --port PORT` and point --base-url (or --host and "
        "--port) at it",
        endpoint.Url(), health.status().message()));
  }
  if (health->status != 200) {
    return UnavailableError(fmt::format(
        "the server at {} is not ready: GET /health answered HTTP {} ({}); "
        "wait until it has loaded the model, then run the benchmark again",
        endpoint.Url(), health->status, ErrorMessageFromBody(health->body)));
  }

  ServerInfo info;
  TSR_ASSIGN_OR_RETURN(Json models, GetJsonObject(endpoint, "/v1/models"));
  if (!models.contains("data") || !models["data"].is_array()) {
    return FailedPreconditionError(fmt::format(
        "GET {}/v1/models has no \"data\" list of models", endpoint.Url()));
  }
  for (const Json& card : models["data"]) {
    if (!card.is_object() || !card.contains("id") || !card["id"].is_string()) {
      continue;
    }
    ServedModel model;
    model.id = card["id"].get<std::string>();
    if (card.contains("max_model_len") &&
        card["max_model_len"].is_number_integer()) {
      model.max_model_len = card["max_model_len"].get<int64_t>();
    }
    info.models.push_back(std::move(model));
  }

  // Optional: other OpenAI-compatible servers have no /server_info.
  auto server_info = GetJsonObject(endpoint, "/server_info");
  if (server_info.ok()) {
    const Json& s = *server_info;
    if (s.contains("vocab_size") && s["vocab_size"].is_number_integer()) {
      info.vocab_size = s["vocab_size"].get<int64_t>();
    }
    if (s.contains("served_model_name") && s["served_model_name"].is_string()) {
      info.served_model_name = s["served_model_name"].get<std::string>();
    }
  } else if (server_info.status().code() == StatusCode::kUnavailable) {
    return server_info.status();  // it answered /health a moment ago
  }
  return info;
}

StatusOr<ServedModel> ChooseModel(const ServerInfo& info,
                                  const std::string& requested) {
  if (info.models.empty()) {
    if (!requested.empty()) return ServedModel{requested, 0};
    if (!info.served_model_name.empty()) {
      return ServedModel{info.served_model_name, 0};
    }
    return InvalidArgumentError(
        "the server lists no model under /v1/models; pass --model NAME");
  }
  if (requested.empty()) return info.models.front();
  std::string names;
  for (const ServedModel& m : info.models) {
    if (m.id == requested) return m;
    names += names.empty() ? m.id : ", " + m.id;
  }
  return InvalidArgumentError(
      fmt::format("--model {} is not served here; the server serves: {}",
                  requested, names));
}

}  // namespace tessera::bench
