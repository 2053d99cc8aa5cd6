// Small pieces every route uses: JSON bodies in and out, OpenAI-shaped
// errors, and the writer of Server-Sent Events.
//
// SSE: an SseWriter appends events (SseEvent / SseDone strings) to the
// bytes a stream's AsyncBody hands the connection (stream_pump.h); the
// connection notices a vanished client itself. Thread-safety: an SseWriter
// belongs to one Pump call.
#ifndef TESSERA_SERVER_HTTP_UTIL_H_
#define TESSERA_SERVER_HTTP_UTIL_H_

#include <optional>
#include <string>
#include <string_view>

#include "base/bounded_json.h"
#include "server/api_error.h"
#include "server/http_message.h"

namespace tessera::server {

inline constexpr JsonLimits kRequestJsonLimits{kMaxJsonDepth, 65536, false};

void SendJson(HttpResponse& res, const Json& body, int status = 200);
void SendError(HttpResponse& res, const ApiError& error);

// Parses the request body as a JSON object within kRequestJsonLimits
// (nesting depth 512, 65,536 keys per object; linear time); on failure,
// a syntax error or a limit, sends a 400 naming it and returns false.
bool ParseJsonBody(const HttpRequest& req, HttpResponse& res, Json* body);

// The value of query parameter `name` in the request target ("" for
// "?name" without a value), nullopt when absent. Values are taken as
// sent ('+' and %XX are not decoded: the parameters read here are plain
// words).
std::optional<std::string> QueryParam(const HttpRequest& req,
                                      std::string_view name);

class SseWriter {
 public:
  explicit SseWriter(std::string* out) : out_(out) {}
  // Appends raw bytes (an SseEvent / SseDone string). It cannot fail: the
  // connection notices a vanished client on its own.
  void Write(const std::string& bytes) { out_->append(bytes); }

 private:
  std::string* out_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_UTIL_H_
