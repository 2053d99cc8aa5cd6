// UpstreamCall: one HTTP request from the router to one worker, run on its
// own thread so the router can wait on a prefill and a decode server at
// once, forward a decode server's stream chunk by chunk, and cancel either
// (closing the connection, which a Tessera server treats as the client
// gone: the request is aborted and its KV freed).
//
// Thread-safety: Start once; then WaitFor*, Take*, Cancel and the
// accessors from any thread. The destructor cancels nothing: it waits for
// the request to end (call Cancel first to hurry it).
#ifndef TESSERA_ROUTER_UPSTREAM_CALL_H_
#define TESSERA_ROUTER_UPSTREAM_CALL_H_

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "base/mutex.h"

namespace httplib {
class Client;
}

namespace tessera::router {

class UpstreamCall {
 public:
  UpstreamCall();
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // POSTs `body` (JSON) to host:port`path`; `authorization` is forwarded
  // when not empty.
  void StartPost(const std::string& host, int port, const std::string& path,
                 std::string body, const std::string& authorization,
                 std::chrono::seconds timeout);
  // GET, same rules.
  void StartGet(const std::string& host, int port, const std::string& path,
                const std::string& authorization, std::chrono::seconds timeout);
  // Hangs up: a call not yet sent is not sent, one in flight has its
  // connection shut (again, every 50 ms while a Wait* runs, so a cancel that
  // lands while the call is still connecting cannot be lost — the race that
  // left a prefill request waiting out its 300 s KV transfer timeout).
  void Cancel() TSR_EXCLUDES(mu_);

  // Waits until a body chunk arrived or the call ended, or `timeout`.
  void WaitForData(std::chrono::milliseconds timeout) TSR_EXCLUDES(mu_);
  // Waits for the end.
  void WaitDone() TSR_EXCLUDES(mu_);
  // Waits for the end at most `timeout`; true when the call has ended.
  bool WaitDoneFor(std::chrono::milliseconds timeout) TSR_EXCLUDES(mu_);
  // Body bytes received since the last call (all of them when not taken).
  std::string TakeData() TSR_EXCLUDES(mu_);

  bool done() const TSR_EXCLUDES(mu_);
  bool has_data() const TSR_EXCLUDES(mu_);
  // The HTTP status (0: no response).
  int status() const TSR_EXCLUDES(mu_);
  // Ended without an HTTP response (connection refused, reset, timeout).
  bool transport_failed() const TSR_EXCLUDES(mu_);
  std::string error() const TSR_EXCLUDES(mu_);
  std::string content_type() const TSR_EXCLUDES(mu_);

 private:
  void Run(std::string method, std::string path, std::string body,
           std::string authorization);

  std::unique_ptr<httplib::Client> client_;
  std::thread thread_;
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<std::string> chunks_ TSR_GUARDED_BY(mu_);
  int status_ TSR_GUARDED_BY(mu_) = 0;
  std::string content_type_ TSR_GUARDED_BY(mu_);
  bool done_ TSR_GUARDED_BY(mu_) = false;
  bool transport_failed_ TSR_GUARDED_BY(mu_) = false;
  bool cancelled_ TSR_GUARDED_BY(mu_) = false;
  std::string error_ TSR_GUARDED_BY(mu_);
};

}  // namespace tessera::router

#endif  // TESSERA_ROUTER_UPSTREAM_CALL_H_
