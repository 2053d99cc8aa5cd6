// HttpRequest and HttpResponse: what a route handler sees of an HTTP
// exchange, independent of the server library underneath (http_server.h).
//
// A handler reads the request and fills the response. The response is
// either complete when the handler returns (status, headers, body), or it
// carries an AsyncBody (stream_pump.h) that produces the rest after the
// handler returned: a Server-Sent Events stream, or a whole response that is
// known only when generation finishes. Either way no thread waits for it.
//
// Thread-compatible value types.
#ifndef TESSERA_SERVER_HTTP_MESSAGE_H_
#define TESSERA_SERVER_HTTP_MESSAGE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::server {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string target;   // as sent: path and query
  std::string path;     // target without the query
  int version = 11;     // 10: HTTP/1.0, 11: HTTP/1.1
  HttpHeaders headers;  // names as the client spelt them, in order
  std::string body;
  std::string remote_addr;

  // The first value of header `name` (case-insensitive), "" when absent.
  std::string get_header_value(std::string_view name) const;
  // How many times header `name` appears.
  size_t get_header_value_count(std::string_view name) const;
  bool has_header(std::string_view name) const {
    return get_header_value_count(name) > 0;
  }
};

class AsyncBody;

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain";
  HttpHeaders headers;  // extra headers (Content-Type/Length are added)
  // Set: the body comes later (see AsyncBody); status and content_type say
  // what the streaming headers are, or are replaced by the final response.
  std::shared_ptr<AsyncBody> async;

  void set_content(std::string content, std::string type) {
    body = std::move(content);
    content_type = std::move(type);
  }
  void set_header(std::string name, std::string value) {
    headers.emplace_back(std::move(name), std::move(value));
  }
};

// A body produced after the handler returned. The connection drives it on
// its own strand: Start once, then Pump whenever `wake` was called (from any
// thread, any number of times), until Pump reports the end.
class AsyncBody {
 public:
  virtual ~AsyncBody() = default;

  // True: Server-Sent Events — the status line and headers go out at once,
  // then each Pump's bytes as they come. False: nothing goes out until Pump
  // finishes and fills the final response.
  virtual bool streaming() const = 0;
  // Arranges for `wake` to be called whenever Pump may make progress.
  virtual void Start(std::function<void()> wake) = 0;
  // Appends what is ready to `*chunk` (streaming) or, at the end, fills
  // `*final` (not streaming). True once finished.
  virtual bool Pump(std::string* chunk, HttpResponse* final) = 0;
  // Bytes to send when nothing was produced for a while (streaming only;
  // an SSE comment that lets a vanished client be noticed).
  virtual std::string Heartbeat() { return ""; }
  // The client is gone (or the server is closing the connection): stop the
  // work behind the body. Idempotent; Pump is not called afterwards.
  virtual void Cancel() = 0;
};

// The reason phrase of an HTTP status ("Not Found").
std::string_view HttpReasonPhrase(int status);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_MESSAGE_H_
