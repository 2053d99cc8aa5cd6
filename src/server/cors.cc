#include "server/cors.h"

#include <algorithm>
#include <utility>

#include "server/api_error.h"

namespace tessera::server {

Status NormalizeAllowedOrigins(std::vector<std::string>* origins) {
  // Rejoined and split again: the flag parser splits at commas and may or
  // may not have taken a JSON list's brackets off already.
  std::string joined;
  for (const std::string& o : *origins) {
    joined += (joined.empty() ? "" : ",") + o;
  }
  auto trim = [](std::string s, std::string_view chars) {
    const size_t begin = s.find_first_not_of(chars);
    if (begin == std::string::npos) return std::string();
    return s.substr(begin, s.find_last_not_of(chars) - begin + 1);
  };
  joined = trim(joined, " ");
  if (!joined.empty() && joined.front() == '[' && joined.back() == ']') {
    joined = joined.substr(1, joined.size() - 2);
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= joined.size() && !joined.empty()) {
    const size_t comma = std::min(joined.find(',', start), joined.size());
    std::string o = trim(joined.substr(start, comma - start), " ");
    if (o.size() >= 2 && o.front() == '"' && o.back() == '"') {
      o = o.substr(1, o.size() - 2);
    }
    start = comma + 1;
    if (o == "*") {
      out.push_back(o);
      continue;
    }
    const size_t scheme_end = o.find("://");
    const bool ok = scheme_end != std::string::npos && scheme_end > 0 &&
                    o.size() > scheme_end + 3 &&
                    o.find_first_of("/\" ", scheme_end + 3) == std::string::npos;
    if (!ok) {
      return InvalidArgumentError(
          "--allowed-origins: '" + o +
          "' is not an origin; write scheme://host[:port] with no path "
          "(e.g. http://localhost:8080), or '*' for any");
    }
    out.push_back(std::move(o));
  }
  *origins = std::move(out);
  return OkStatus();
}

CorsPolicy::CorsPolicy(std::vector<std::string> allowed_origins)
    : allowed_(std::move(allowed_origins)) {
  any_ = std::find(allowed_.begin(), allowed_.end(), "*") != allowed_.end();
}

std::optional<std::string> CorsPolicy::AllowOrigin(
    std::string_view origin) const {
  if (!enabled() || origin.empty()) return std::nullopt;
  if (any_) return std::string("*");
  if (std::find(allowed_.begin(), allowed_.end(), origin) != allowed_.end()) {
    return std::string(origin);
  }
  return std::nullopt;
}

bool CorsPolicy::IsPreflight(const HttpRequest& request) {
  return request.method == "OPTIONS" && request.has_header("Origin") &&
         request.has_header("Access-Control-Request-Method");
}

void CorsPolicy::AnswerPreflight(const HttpRequest& request,
                                 HttpResponse& response) const {
  const std::string origin = request.get_header_value("Origin");
  std::optional<std::string> allow = AllowOrigin(origin);
  if (!allow) {
    const ApiError error{403,
                         "origin '" + origin +
                             "' is not allowed; start the server with "
                             "--allowed-origins listing it",
                         "invalid_request_error", "", ""};
    response.status = error.http_status;
    response.set_content(error.Body(), "application/json");
    return;
  }
  response.status = 200;
  response.set_content("", "text/plain");
  response.set_header("Access-Control-Allow-Origin", *allow);
  response.set_header("Vary", "Origin");
  response.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  std::string headers =
      request.get_header_value("Access-Control-Request-Headers");
  if (headers.empty()) headers = "Authorization, Content-Type";
  response.set_header("Access-Control-Allow-Headers", headers);
  response.set_header("Access-Control-Max-Age", "600");
}

void CorsPolicy::AddHeaders(const HttpRequest& request,
                            HttpResponse& response) const {
  std::optional<std::string> allow =
      AllowOrigin(request.get_header_value("Origin"));
  if (!allow) return;
  response.set_header("Access-Control-Allow-Origin", *allow);
  response.set_header("Vary", "Origin");
  response.set_header("Access-Control-Expose-Headers", "*");
}

}  // namespace tessera::server
