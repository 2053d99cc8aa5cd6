// HttpServer: `tessera serve`'s HTTP front end — an event-driven HTTP/1.1
// server on Boost.Asio with Beast's parser (http_connection.h), the routes
// of routes.h, API-key authentication and OpenAI-shaped 404/405/500 answers.
//
// Threads: `io_threads` run every connection's reads, writes and timers; a
// pool of `http_threads` handler workers runs route handlers (parsing,
// tokenizing, chat templates, submitting to the engine). A handler never
// waits for generation: it returns an AsyncBody (stream_pump.h) that the
// connection drives as outputs arrive, so a thousand open streams need no
// thread each, and a connection that sends nothing holds no thread at all.
//
// Limits (ServerOptions): at most max_connections open connections (more
// are answered 503 at once and closed; the file-descriptor limit is raised
// at start-up to fit), the per-connection deadlines and sizes of
// ConnectionLimits, and a body limit per route (413).
//
// Authentication: with an API key set, every route except /health,
// /health_generate and /metrics needs exactly one "Authorization: Bearer
// <key>" header (SGLang's rule), compared in constant time; otherwise 401.
//
// Lifecycle: Bind (exclusive: a port in use is an error naming it), then Run
// (blocks until Stop and the in-flight answers have drained). Stop is
// thread-safe and idempotent: no new connections, idle ones close, the rest
// close after their current answer. After `force_after` seconds from Stop
// what is left is closed (cancelling its work) and Run returns.
#ifndef TESSERA_SERVER_HTTP_SERVER_H_
#define TESSERA_SERVER_HTTP_SERVER_H_

#include <chrono>
#include <memory>

#include "base/status.h"
#include "server/serving_context.h"

namespace tessera::server {

class HttpServer {
 public:
  explicit HttpServer(ServingContext& ctx);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: any free port). Unavailable naming the port
  // and the reason ("address already in use") when it cannot.
  Status Bind();
  int port() const;
  // Serves until Stop; returns once every connection is closed. False when
  // handler threads were still busy at the forced deadline (the caller
  // should exit the process rather than destroy what they use).
  bool Run();
  void Stop(std::chrono::seconds force_after = std::chrono::seconds(30));

  // Open connections, for /server_info and tests.
  size_t open_connections() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_SERVER_H_
