// HttpServer: `tessera serve`'s HTTP front end on cpp-httplib — the routes
// of routes.h, API-key authentication, OpenAI-shaped 404/500 answers, and a
// worker pool sized so that every streaming connection has its own thread
// (ServerOptions::http_threads, default 512: 256 concurrent streams and
// more never queue behind each other; the engine's scheduler, not the HTTP
// layer, decides what runs).
//
// Authentication: with an API key set, every route except /health,
// /health_generate and /metrics needs "Authorization: Bearer <key>"
// (SGLang's rule); otherwise 401 invalid_api_key.
//
// Lifecycle: Bind, then Run (blocks until Stop; returns once in-flight
// handlers have finished). Stop is thread-safe and idempotent.
#ifndef TESSERA_SERVER_HTTP_SERVER_H_
#define TESSERA_SERVER_HTTP_SERVER_H_

#include <httplib.h>

#include "base/status.h"
#include "server/serving_context.h"

namespace tessera::server {

class HttpServer {
 public:
  explicit HttpServer(ServingContext& ctx);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (port 0: any free port). Unavailable when the address
  // is taken, with what to do.
  Status Bind();
  int port() const { return port_; }
  void Run();
  void Stop();

 private:
  void RegisterRoutes();

  ServingContext& ctx_;
  httplib::Server server_;
  int port_ = 0;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_SERVER_H_
