#include "server/http_util.h"

#include <utility>

#include "server/openai_response.h"

namespace tessera::server {

void SendJson(HttpResponse& res, const Json& body, int status) {
  res.status = status;
  res.set_content(DumpCompact(body), "application/json");
}

void SendError(HttpResponse& res, const ApiError& error) {
  res.status = error.http_status;
  res.set_content(error.Body(), "application/json");
}

bool ParseJsonBody(const HttpRequest& req, HttpResponse& res, Json* body) {
  auto parsed = ParseBoundedOrderedJson(req.body, kRequestJsonLimits);
  if (!parsed.ok()) {
    SendError(res, BadRequest("the request body is not valid JSON: " +
                              parsed.status().message()));
    return false;
  }
  *body = std::move(*parsed);
  if (!body->is_object()) {
    SendError(res, BadRequest("the request body must be a JSON object"));
    return false;
  }
  return true;
}

std::optional<std::string> QueryParam(const HttpRequest& req,
                                      std::string_view name) {
  const size_t q = req.target.find('?');
  if (q == std::string::npos) return std::nullopt;
  std::string_view rest = std::string_view(req.target).substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const size_t eq = item.find('=');
    if (item.substr(0, eq) != name) continue;
    return std::string(eq == std::string_view::npos ? std::string_view()
                                                    : item.substr(eq + 1));
  }
  return std::nullopt;
}

}  // namespace tessera::server
