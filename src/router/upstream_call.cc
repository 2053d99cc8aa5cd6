#include "router/upstream_call.h"

#include <httplib.h>

namespace tessera::router {

UpstreamCall::UpstreamCall() = default;

UpstreamCall::~UpstreamCall() {
  if (thread_.joinable()) thread_.join();
}

void UpstreamCall::StartPost(const std::string& host, int port,
                             const std::string& path, std::string body,
                             const std::string& authorization,
                             std::chrono::seconds timeout) {
  client_ = std::make_unique<httplib::Client>(host, port);
  client_->set_connection_timeout(std::chrono::seconds(5));
  client_->set_read_timeout(timeout);
  client_->set_write_timeout(std::chrono::seconds(60));
  client_->set_tcp_nodelay(true);
  thread_ = std::thread([this, path, body = std::move(body), authorization] {
    Run("POST", path, body, authorization);
  });
}

void UpstreamCall::StartGet(const std::string& host, int port,
                            const std::string& path,
                            const std::string& authorization,
                            std::chrono::seconds timeout) {
  client_ = std::make_unique<httplib::Client>(host, port);
  client_->set_connection_timeout(std::chrono::seconds(5));
  client_->set_read_timeout(timeout);
  thread_ = std::thread(
      [this, path, authorization] { Run("GET", path, "", authorization); });
}

void UpstreamCall::Run(std::string method, std::string path, std::string body,
                       std::string authorization) {
  httplib::Request req;
  req.method = std::move(method);
  req.path = std::move(path);
  req.body = std::move(body);
  if (!req.body.empty()) req.set_header("Content-Type", "application/json");
  req.set_header("Accept-Encoding", "identity");
  if (!authorization.empty()) req.set_header("Authorization", authorization);
  req.response_handler = [this](const httplib::Response& r) {
    MutexLock lock(&mu_);
    status_ = r.status;
    content_type_ = r.get_header_value("Content-Type");
    return true;
  };
  req.content_receiver = [this](const char* data, size_t size, uint64_t,
                                uint64_t) {
    {
      MutexLock lock(&mu_);
      chunks_.emplace_back(data, size);
    }
    cv_.SignalAll();
    return true;
  };
  bool cancelled;
  {
    MutexLock lock(&mu_);
    cancelled = cancelled_;
  }
  httplib::Response response;
  httplib::Error error = httplib::Error::Canceled;
  // A call cancelled before it was sent is never sent.
  const bool sent = !cancelled && client_->send(req, response, error);
  {
    MutexLock lock(&mu_);
    if (!sent) {
      if (status_ == 0) transport_failed_ = true;
      error_ = httplib::to_string(error);
    }
    done_ = true;
  }
  cv_.SignalAll();
}

void UpstreamCall::Cancel() {
  {
    MutexLock lock(&mu_);
    cancelled_ = true;
  }
  if (client_) client_->stop();
}

void UpstreamCall::WaitForData(std::chrono::milliseconds timeout) {
  MutexLock lock(&mu_);
  if (chunks_.empty() && !done_) cv_.WaitFor(&mu_, timeout);
}

void UpstreamCall::WaitDone() {
  while (!WaitDoneFor(std::chrono::hours(1))) {
  }
}

bool UpstreamCall::WaitDoneFor(std::chrono::milliseconds timeout) {
  // A cancelled call is re-stopped every kRestop: its connection may have
  // opened after Cancel's stop(), which then had nothing to shut.
  constexpr auto kRestop = std::chrono::milliseconds(50);
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool cancelled = false;
    {
      MutexLock lock(&mu_);
      if (done_) return true;
      const auto now = std::chrono::steady_clock::now();
      if (now >= until) return false;
      const std::chrono::steady_clock::duration left = until - now;
      cv_.WaitFor(&mu_, cancelled_ ? std::min<std::chrono::steady_clock::duration>(kRestop, left)
                                   : left);
      if (done_) return true;
      cancelled = cancelled_;
    }
    if (cancelled) client_->stop();
  }
}

std::string UpstreamCall::TakeData() {
  MutexLock lock(&mu_);
  std::string out;
  for (std::string& c : chunks_) out += c;
  chunks_.clear();
  return out;
}

bool UpstreamCall::done() const {
  MutexLock lock(&mu_);
  return done_;
}

bool UpstreamCall::has_data() const {
  MutexLock lock(&mu_);
  return !chunks_.empty();
}

int UpstreamCall::status() const {
  MutexLock lock(&mu_);
  return status_;
}

bool UpstreamCall::transport_failed() const {
  MutexLock lock(&mu_);
  return transport_failed_;
}

std::string UpstreamCall::error() const {
  MutexLock lock(&mu_);
  return error_;
}

std::string UpstreamCall::content_type() const {
  MutexLock lock(&mu_);
  return content_type_;
}

}  // namespace tessera::router
