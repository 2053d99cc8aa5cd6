// Where the benchmark sends its requests, and plain JSON GETs against it
// (the readiness and metadata probes; the streamed completions are in
// request_runner.h). HTTP goes through cpp-httplib (Debian's
// libcpp-httplib-dev), which stays out of this header.
//
// Stateless functions; safe to call from any number of threads (each call
// makes its own connection).
#ifndef TESSERA_BENCH_HTTP_ENDPOINT_H_
#define TESSERA_BENCH_HTTP_ENDPOINT_H_

#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera::bench {

struct Endpoint {
  std::string origin;       // "http://host:port": scheme, host, port
  std::string path_prefix;  // "" or e.g. "/tessera"; never ends in "/"

  // origin + path_prefix, as a person would type it.
  std::string Url() const { return origin + path_prefix; }
};

// "http://h:p[/prefix]", "https://..." or "h:p" (http assumed).
// InvalidArgument for another scheme or an empty host.
StatusOr<Endpoint> ParseBaseUrl(std::string_view base_url);

struct HttpReply {
  int status = 0;
  std::string body;
};

// GET origin + path_prefix + path with `timeout_s` for connecting and for
// reading. Unavailable when no answer came (connection refused, timeout),
// naming the URL and httplib's reason; any HTTP status is a reply.
StatusOr<HttpReply> HttpGet(const Endpoint& endpoint, const std::string& path,
                            double timeout_s);

// The "error.message" of an OpenAI-shaped error body, else the body itself
// clipped to 300 bytes (or "(empty body)").
std::string ErrorMessageFromBody(std::string_view body);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_HTTP_ENDPOINT_H_
