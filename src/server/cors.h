// Cross-origin resource sharing for browsers calling the API from another
// origin (a web UI on another port, a notebook), per --allowed-origins.
//
// Off (no origins) by default: no CORS headers, and a preflight (OPTIONS)
// is answered 405 like any other method a route does not take. On:
// - an allowed Origin gets Access-Control-Allow-Origin (the origin itself,
//   or "*" when the list holds "*"), Vary: Origin and
//   Access-Control-Expose-Headers on every response, errors included;
// - a preflight (OPTIONS with Origin and Access-Control-Request-Method) is
//   answered here, before authentication (browsers send no credentials on
//   preflights): the allowed methods (GET, POST, OPTIONS), the
//   requested headers and Access-Control-Max-Age (200, empty body, as
//   Starlette answers), or 403 when the origin is
//   not allowed.
// Origins compare as exact strings (scheme://host[:port]), as browsers send
// them. Immutable after construction; thread-safe.
#ifndef TESSERA_SERVER_CORS_H_
#define TESSERA_SERVER_CORS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/http_message.h"

namespace tessera::server {

// --allowed-origins as given (comma-separated values, or vLLM's JSON list
// '["http://a:1", "*"]' split at its commas by the flag parser) checked and
// normalized in place: each "*" or scheme://host[:port] with no path. An
// INVALID_ARGUMENT naming the bad entry otherwise.
Status NormalizeAllowedOrigins(std::vector<std::string>* origins);

class CorsPolicy {
 public:
  explicit CorsPolicy(std::vector<std::string> allowed_origins);

  bool enabled() const { return !allowed_.empty(); }
  // The Access-Control-Allow-Origin value for `origin`; nullopt when CORS is
  // off, `origin` is empty or not allowed.
  std::optional<std::string> AllowOrigin(std::string_view origin) const;
  // An OPTIONS request carrying Origin and Access-Control-Request-Method.
  static bool IsPreflight(const HttpRequest& request);
  // Fills the answer to a preflight (call only when enabled()).
  void AnswerPreflight(const HttpRequest& request,
                       HttpResponse& response) const;
  // Adds the CORS headers of an actual (non-preflight) response.
  void AddHeaders(const HttpRequest& request, HttpResponse& response) const;

 private:
  std::vector<std::string> allowed_;
  bool any_ = false;  // "*" in the list
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CORS_H_
