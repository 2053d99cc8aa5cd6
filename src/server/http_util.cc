#include "server/http_util.h"

#include <memory>
#include <utility>

#include "base/bounded_json.h"
#include "server/openai_response.h"

namespace tessera::server {

void SendJson(httplib::Response& res, const Json& body, int status) {
  res.status = status;
  res.set_content(DumpCompact(body), "application/json");
}

void SendError(httplib::Response& res, const ApiError& error) {
  res.status = error.http_status;
  res.set_content(error.Body(), "application/json");
}

bool ParseJsonBody(const httplib::Request& req, httplib::Response& res,
                   Json* body) {
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

bool SseWriter::Write(const std::string& bytes) {
  if (!ok_) return false;
  if (!sink_.write(bytes.data(), bytes.size())) ok_ = false;
  return ok_;
}

void StartSse(httplib::Response& res, std::function<void(SseWriter&)> producer,
              std::function<void(bool)> on_close) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto ran = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
      "text/event-stream",
      [producer = std::move(producer), ran](size_t /*offset*/,
                                            httplib::DataSink& sink) {
        if (*ran) {
          sink.done();
          return true;
        }
        *ran = true;
        SseWriter writer(sink);
        producer(writer);
        if (!writer.ok()) return false;
        sink.done();
        return true;
      },
      [on_close = std::move(on_close)](bool success) {
        if (on_close) on_close(success);
      });
}

}  // namespace tessera::server
