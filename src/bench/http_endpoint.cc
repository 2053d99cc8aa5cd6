#include "bench/http_endpoint.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "base/bounded_json.h"

namespace tessera::bench {

StatusOr<Endpoint> ParseBaseUrl(std::string_view base_url) {
  std::string_view rest = base_url;
  std::string scheme = "http";
  if (const size_t sep = rest.find("://"); sep != std::string_view::npos) {
    scheme = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 3);
  }
  if (scheme != "http" && scheme != "https") {
    return InvalidArgumentError(fmt::format(
        "--base-url '{}': the scheme must be http:// or https://", base_url));
  }
  const size_t slash = rest.find('/');
  const std::string_view host_port = rest.substr(0, slash);
  if (host_port.empty() || host_port.front() == ':') {
    return InvalidArgumentError(fmt::format(
        "--base-url '{}' names no host; write e.g. http://127.0.0.1:30000",
        base_url));
  }
  Endpoint endpoint;
  endpoint.origin = fmt::format("{}://{}", scheme, host_port);
  if (slash != std::string_view::npos) {
    endpoint.path_prefix = std::string(rest.substr(slash));
    while (!endpoint.path_prefix.empty() &&
           endpoint.path_prefix.back() == '/') {
      endpoint.path_prefix.pop_back();
    }
  }
  return endpoint;
}

StatusOr<HttpReply> HttpGet(const Endpoint& endpoint, const std::string& path,
                            double timeout_s) {
  httplib::Client client(endpoint.origin);
  const std::string url = endpoint.Url() + path;
  if (!client.is_valid()) {
    return InvalidArgumentError(fmt::format("cannot use the URL {}", url));
  }
  const auto timeout = std::chrono::duration<double>(timeout_s);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  client.set_write_timeout(timeout);
  httplib::Result result = client.Get(endpoint.path_prefix + path);
  if (!result) {
    return UnavailableError(fmt::format("GET {} got no answer ({})", url,
                                        httplib::to_string(result.error())));
  }
  HttpReply reply;
  reply.status = result->status;
  reply.body = std::move(result->body);
  return reply;
}

std::string ErrorMessageFromBody(std::string_view body) {
  auto bounded = ParseBoundedJson(body);
  const nlohmann::json parsed =
      bounded.ok() ? std::move(*bounded) : nlohmann::json();
  if (parsed.is_object() && parsed.contains("error")) {
    const nlohmann::json& error = parsed["error"];
    if (error.is_object() && error.contains("message") &&
        error["message"].is_string()) {
      return error["message"].get<std::string>();
    }
    if (error.is_string()) return error.get<std::string>();
  }
  if (body.empty()) return "(empty body)";
  if (body.size() <= 300) return std::string(body);
  return std::string(body.substr(0, 300)) + "...";
}

}  // namespace tessera::bench
