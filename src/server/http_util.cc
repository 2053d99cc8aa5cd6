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

}  // namespace tessera::server
