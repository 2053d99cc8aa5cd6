// Small pieces every route uses on top of cpp-httplib: JSON bodies in and
// out, OpenAI-shaped errors, and Server-Sent Events responses.
//
// SSE: StartSse hands the response a chunked text/event-stream body whose
// bytes `producer` writes through an SseWriter on the handler's thread
// (after the route handler returned). Write() returns false once the client
// is gone; Heartbeat() writes an SSE comment (ignored by clients) so a
// vanished client is noticed even while nothing is generated. Thread-safety:
// an SseWriter belongs to one producer call.
#ifndef TESSERA_SERVER_HTTP_UTIL_H_
#define TESSERA_SERVER_HTTP_UTIL_H_

#include <httplib.h>

#include <functional>
#include <string>

#include "base/bounded_json.h"
#include "server/api_error.h"

namespace tessera::server {

inline constexpr JsonLimits kRequestJsonLimits{kMaxJsonDepth, 65536, false};

void SendJson(httplib::Response& res, const Json& body, int status = 200);
void SendError(httplib::Response& res, const ApiError& error);

// Parses the request body as a JSON object within kRequestJsonLimits
// (nesting depth 512, 65,536 keys per object; linear time); on failure,
// a syntax error or a limit, sends a 400 naming it and returns false.
bool ParseJsonBody(const httplib::Request& req, httplib::Response& res,
                   Json* body);

class SseWriter {
 public:
  explicit SseWriter(httplib::DataSink& sink) : sink_(sink) {}
  // Writes raw bytes (an SseEvent / SseDone string); false: client gone.
  bool Write(const std::string& bytes);
  bool Heartbeat() { return Write(": keep-alive\n\n"); }
  bool ok() const { return ok_; }

 private:
  httplib::DataSink& sink_;
  bool ok_ = true;
};

// `producer` runs once and writes the whole stream; `on_close(true)` runs
// after it, or `on_close(false)` if the connection failed.
void StartSse(httplib::Response& res, std::function<void(SseWriter&)> producer,
              std::function<void(bool)> on_close = nullptr);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_UTIL_H_
