// Router: `tessera router`, an OpenAI-compatible load balancer in front of
// Tessera (or SGLang) servers — sgl-router's job.
//
// Aggregated (--worker-urls): each request goes to one worker chosen by the
// policy (worker_set.h): data parallelism.
// Disaggregated (--prefill URL [BOOTSTRAP_PORT] ... --decode URL ...): each
// request is paired with a prefill and a decode server. The router draws a
// random bootstrap_room, adds bootstrap_host / bootstrap_port /
// bootstrap_room to the body and sends it to both at once; the prefill
// server computes the prompt and pushes its KV into the decode server's
// pool (src/disagg), the decode server generates, and the client gets the
// decode server's answer (streamed as it comes). The prefill server's own
// answer is read and dropped, except that its error is returned when the
// decode server failed too.
//
// Routes: POST /v1/completions, /v1/chat/completions, /generate (proxied);
// GET /v1/models and /server_info (from a healthy worker), /health (200 while at least one
// worker of each needed role is healthy), /metrics (the router's counters
// and every worker's health and load), /workers (the same as JSON).
//
// Failures: a worker that cannot be reached is marked down at once and the
// request is retried on another (up to --retry-max-retries times) as long
// as nothing has been sent to the client yet; the health checks bring it
// back. A decode server that dies mid-answer ends that answer with an error
// (an SSE error event when streaming); other requests are unaffected.
//
// Threads: cpp-httplib's server with a pool of --router-threads handler
// threads (one per request in flight), plus two threads per proxied call
// (upstream_call.h) and the health thread.
#ifndef TESSERA_ROUTER_ROUTER_H_
#define TESSERA_ROUTER_ROUTER_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "router/worker_set.h"

namespace tessera::router {

struct RouterOptions {
  std::string host = "127.0.0.1";
  int port = 30000;
  int threads = 256;             // requests handled at once
  int max_retries = 3;           // attempts after the first
  int request_timeout_s = 1800;  // the longest wait for a worker's answer
  int health_check_interval_s = 10;
  int health_failure_threshold = 3;
};

class Router {
 public:
  // Binds host:port (exclusively: a port in use is an error naming it) and
  // starts the health checks.
  static StatusOr<std::unique_ptr<Router>> Create(
      RouterOptions options, std::unique_ptr<WorkerSet> workers);
  ~Router();

  int port() const;
  // Serves until Stop.
  void Run();
  void Stop();

  class Impl;

 private:
  explicit Router(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::router

#endif  // TESSERA_ROUTER_ROUTER_H_
