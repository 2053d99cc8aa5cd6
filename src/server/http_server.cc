#include "server/http_server.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/constant_time.h"
#include "base/logging.h"
#include "server/cors.h"
#include "server/http_connection.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace tessera::server {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// Bodies of the generating and tokenizing routes may hold long prompts;
// the others take small JSON objects.
constexpr size_t kMaxPromptBodyBytes = size_t{64} << 20;
constexpr size_t kMaxSmallBodyBytes = size_t{1} << 20;
constexpr int kIoThreads = 2;
constexpr int kListenBacklog = 4096;
// Descriptors kept beyond the connection limit (plugins, model files, logs).
constexpr rlim_t kSpareDescriptors = 256;

using Handler = void (*)(ServingContext&, const HttpRequest&, HttpResponse&);

struct Route {
  const char* method;
  const char* path;  // exact, or a prefix when it ends with '/' ("/" is exact)
  Handler handler;
  size_t max_body;
};

constexpr Route kRoutes[] = {
    {"POST", "/v1/completions", HandleCompletions, kMaxPromptBodyBytes},
    {"POST", "/v1/chat/completions", HandleChatCompletions,
     kMaxPromptBodyBytes},
    {"POST", "/v1/embeddings", HandleEmbeddings, kMaxPromptBodyBytes},
    {"GET", "/", HandleChatPage, 0},
    {"GET", "/v1/models", HandleModels, 0},
    {"GET", "/v1/models/", HandleModel, 0},
    {"POST", "/generate", HandleGenerate, kMaxPromptBodyBytes},
    {"POST", "/tokenize", HandleTokenize, kMaxPromptBodyBytes},
    {"POST", "/detokenize", HandleDetokenize, kMaxPromptBodyBytes},
    {"GET", "/health", HandleHealth, 0},
    {"GET", "/health_generate", HandleHealthGenerate, 0},
    {"GET", "/server_info", HandleServerInfo, 0},
    {"GET", "/get_server_info", HandleServerInfo, 0},
    {"POST", "/flush_cache", HandleFlushCache, kMaxSmallBodyBytes},
    {"GET", "/flush_cache", HandleFlushCache, 0},
    {"POST", "/abort_request", HandleAbortRequest, kMaxSmallBodyBytes},
    {"GET", "/metrics", HandleMetrics, 0},
};

bool Matches(const Route& route, const std::string& path) {
  const std::string_view pattern = route.path;
  if (pattern.size() > 1 && pattern.back() == '/') {
    return path.size() > pattern.size() && path.starts_with(pattern);
  }
  return path == pattern;
}

// The chat page holds no data (it asks for the key to call the API).
bool IsPublicPath(const std::string& path) {
  return path == "/health" || path == "/health_generate" ||
         path == "/metrics" || path == "/";
}

// A fixed pool of handler threads fed from one queue.
class HandlerPool {
 public:
  explicit HandlerPool(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this] { Work(); });
    }
  }
  ~HandlerPool() { Join(); }

  void Post(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(std::move(job));
    }
    cv_.notify_one();
  }

  // Stops the workers once the queue is empty. Returns false, detaching
  // them, when some are still busy at `deadline`.
  bool Join(std::chrono::steady_clock::time_point deadline =
                std::chrono::steady_clock::time_point::max()) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      stopping_ = true;
      cv_.notify_all();
      if (!idle_cv_.wait_until(lock, deadline,
                               [&] { return jobs_.empty() && busy_ == 0; })) {
        for (auto& t : threads_) t.detach();
        threads_.clear();
        return false;
      }
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
    return true;
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      ++busy_;
      lock.unlock();
      job();
      lock.lock();
      --busy_;
      if (jobs_.empty() && busy_ == 0) idle_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  int busy_ = 0;                            // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

std::string Lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(c));
  return s;
}

}  // namespace

class HttpServer::Impl : public ConnectionHost {
 public:
  explicit Impl(ServingContext& ctx)
      : ctx_(ctx),
        cors_(ctx.options.allowed_origins),
        acceptor_(io_),
        accept_retry_(io_),
        pool_(std::max(ctx.options.http_threads, 2)) {
    limits_.read_timeout = std::chrono::seconds(ctx.options.http_read_timeout);
    limits_.keep_alive_timeout =
        std::chrono::seconds(ctx.options.http_keep_alive_timeout);
    limits_.max_body_bytes = kMaxPromptBodyBytes;
  }

  Status Bind();
  int port() const { return port_; }
  bool Run();
  void Stop(std::chrono::seconds force_after);
  size_t open_connections() const {
    std::lock_guard<std::mutex> lock(mu_);
    return connections_.size();
  }

  // ConnectionHost
  size_t MaxBodyBytes(const std::string& method,
                      const std::string& path) override;
  void Dispatch(std::shared_ptr<HttpRequest> request,
                std::function<void(HttpResponse)> done) override;
  void ConnectionClosed(const HttpConnection* connection) override;

 private:
  void Accept();
  void OnAccepted(const error_code& ec, tcp::socket socket);
  void RefuseConnection(tcp::socket socket);
  // CORS around Answer; Answer finds the route and runs its handler.
  HttpResponse Handle(const HttpRequest& request);
  HttpResponse Answer(const HttpRequest& request);
  bool Authorized(const HttpRequest& request, HttpResponse& response) const;
  size_t RaiseDescriptorLimit();

  ServingContext& ctx_;
  const CorsPolicy cors_;
  ConnectionLimits limits_;
  size_t max_connections_ = 0;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_;
  HandlerPool pool_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Open connections by address (weak: a connection owns itself).
  std::unordered_map<const HttpConnection*, std::weak_ptr<HttpConnection>>
      connections_;                                       // guarded by mu_
  int handlers_in_flight_ = 0;                            // guarded by mu_
  bool stopped_ = false;                                  // guarded by mu_
  std::chrono::steady_clock::time_point force_deadline_;  // guarded by mu_
};

// Raises the soft RLIMIT_NOFILE so that max_connections fit; returns the
// connection limit the descriptors allow.
size_t HttpServer::Impl::RaiseDescriptorLimit() {
  const auto wanted =
      static_cast<rlim_t>(ctx_.options.max_connections) + kSpareDescriptors;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return static_cast<size_t>(ctx_.options.max_connections);
  }
  if (limit.rlim_cur < wanted) {
    rlimit raised = limit;
    raised.rlim_cur = std::min(wanted, limit.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur < wanted) {
    const size_t fit =
        limit.rlim_cur > kSpareDescriptors
            ? static_cast<size_t>(limit.rlim_cur - kSpareDescriptors)
            : 16;
    TSR_LOG_WARN(
        "the open-file limit ({}) allows only {} connections, not the {} of "
        "--max-connections; raise it with 'ulimit -n'",
        limit.rlim_cur, fit, ctx_.options.max_connections);
    return fit;
  }
  return static_cast<size_t>(ctx_.options.max_connections);
}

Status HttpServer::Impl::Bind() {
  const std::string& host = ctx_.options.host;
  const int wanted_port = ctx_.options.port;
  max_connections_ = RaiseDescriptorLimit();
  error_code ec;
  tcp::resolver resolver(io_);
  const auto endpoints = resolver.resolve(
      host, std::to_string(wanted_port),
      tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return UnavailableError(fmt::format(
        "cannot listen on {}:{}: '{}' is not an address of this machine ({}); "
        "pick another with --host",
        host, wanted_port, host, Lowercase(ec.message())));
  }
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  // SO_REUSEADDR (restart while old connections sit in TIME_WAIT) but not
  // SO_REUSEPORT: a second server on a busy port must fail, not share it.
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(kListenBacklog, ec);
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
    return UnavailableError(fmt::format(
        "cannot listen on {}:{}: {}; is another server running there? pick "
        "another with --port or --host",
        host, wanted_port, Lowercase(ec.message())));
  }
  port_ = acceptor_.local_endpoint().port();
  return OkStatus();
}

void HttpServer::Impl::Accept() {
  acceptor_.async_accept(asio::make_strand(io_),
                         [this](const error_code& ec, tcp::socket socket) {
                           OnAccepted(ec, std::move(socket));
                         });
}

void HttpServer::Impl::OnAccepted(const error_code& ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    // Out of descriptors (EMFILE) and the like: retry shortly rather than
    // spin on an accept that keeps failing.
    TSR_LOG_WARN("accept failed: {}; retrying in 100 ms", ec.message());
    accept_retry_.expires_after(std::chrono::milliseconds(100));
    accept_retry_.async_wait([this](const error_code& wait_ec) {
      if (!wait_ec) Accept();
    });
    return;
  }
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  std::shared_ptr<HttpConnection> connection;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) {
      socket.close(ignored);
      return;
    }
    if (connections_.size() < max_connections_) {
      connection =
          std::make_shared<HttpConnection>(std::move(socket), *this, limits_);
      connections_.emplace(connection.get(), connection);
    }
  }
  if (connection) {
    connection->Start();
  } else {
    RefuseConnection(std::move(socket));
  }
  Accept();
}

// Beyond --max-connections: a 503 at once, then close.
void HttpServer::Impl::RefuseConnection(tcp::socket socket) {
  const ApiError error{503,
                       "too many open connections (--max-connections); "
                       "retry later",
                       "server_error", "", ""};
  const std::string body = error.Body();
  auto reply = std::make_shared<std::string>(fmt::format(
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
      body.size(), body));
  auto held = std::make_shared<tcp::socket>(std::move(socket));
  asio::async_write(*held, asio::buffer(*reply),
                    [held, reply](const error_code&, size_t) {
                      error_code ignored;
                      held->shutdown(tcp::socket::shutdown_both, ignored);
                      held->close(ignored);
                    });
}

size_t HttpServer::Impl::MaxBodyBytes(const std::string& method,
                                      const std::string& path) {
  for (const Route& route : kRoutes) {
    if (method == route.method && Matches(route, path)) return route.max_body;
  }
  return 0;  // unknown routes take no body (answered 404/405)
}

void HttpServer::Impl::Dispatch(std::shared_ptr<HttpRequest> request,
                                std::function<void(HttpResponse)> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++handlers_in_flight_;
  }
  pool_.Post([this, request = std::move(request), done = std::move(done)] {
    HttpResponse response = Handle(*request);
    done(std::move(response));
    std::lock_guard<std::mutex> lock(mu_);
    --handlers_in_flight_;
    cv_.notify_all();
  });
}

bool HttpServer::Impl::Authorized(const HttpRequest& request,
                                  HttpResponse& response) const {
  if (ctx_.options.api_key.empty() || IsPublicPath(request.path)) return true;
  if (request.get_header_value_count("Authorization") > 1) {
    SendError(response, Unauthorized("more than one Authorization header; "
                                     "send exactly one 'Authorization: "
                                     "Bearer <key>'"));
    return false;
  }
  const std::string auth = request.get_header_value("Authorization");
  if (ConstantTimeEquals(auth, "Bearer " + ctx_.options.api_key)) return true;
  SendError(response,
            Unauthorized(auth.empty()
                             ? "missing API key: send 'Authorization: Bearer "
                               "<key>' (the server was started with --api-key)"
                             : "incorrect API key provided"));
  return false;
}

HttpResponse HttpServer::Impl::Handle(const HttpRequest& request) {
  HttpResponse response;
  if (cors_.enabled() && CorsPolicy::IsPreflight(request)) {
    cors_.AnswerPreflight(request, response);
    return response;
  }
  response = Answer(request);
  cors_.AddHeaders(request, response);
  return response;
}

HttpResponse HttpServer::Impl::Answer(const HttpRequest& request) {
  HttpResponse response;
  try {
    if (!ctx_.ready.load(std::memory_order_acquire)) {
      SendError(response, ServiceUnavailable("the model is still loading; "
                                             "retry when /health answers "
                                             "200"));
      return response;
    }
    if (!Authorized(request, response)) return response;
    bool path_known = false;
    for (const Route& route : kRoutes) {
      if (!Matches(route, request.path)) continue;
      path_known = true;
      if (request.method == route.method) {
        route.handler(ctx_, request, response);
        return response;
      }
    }
    if (path_known) {
      SendError(response, ApiError{405, "method not allowed",
                                   "invalid_request_error", "", ""});
    } else {
      SendError(response, NotFound(fmt::format(
                              "no route {} {}; see docs/ARCHITECTURE.md for "
                              "the endpoints",
                              request.method, request.path)));
    }
  } catch (const std::exception& e) {
    TSR_LOG_ERROR("{} {} failed: {}", request.method, request.path, e.what());
    response = HttpResponse();
    SendError(response,
              InternalServerError(std::string("internal error: ") + e.what()));
  }
  return response;
}

void HttpServer::Impl::ConnectionClosed(const HttpConnection* connection) {
  std::lock_guard<std::mutex> lock(mu_);
  connections_.erase(connection);
  cv_.notify_all();
}

bool HttpServer::Impl::Run() {
  Accept();
  std::vector<std::thread> io_threads;
  for (int i = 0; i < kIoThreads; ++i) {
    io_threads.emplace_back([this] {
      auto guard = asio::make_work_guard(io_);
      io_.run();
    });
  }
  std::vector<std::shared_ptr<HttpConnection>> left;
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stopped_; });
    cv_.wait_until(lock, force_deadline_, [&] {
      return connections_.empty() && handlers_in_flight_ == 0;
    });
    for (auto& [address, weak] : connections_) {
      if (auto connection = weak.lock()) left.push_back(connection);
    }
  }
  if (!left.empty()) {
    TSR_LOG_WARN(
        "closing {} connection(s) still open at the shutdown "
        "deadline",
        left.size());
    for (auto& connection : left) connection->Abort();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(2),
                 [&] { return connections_.empty(); });
  }
  left.clear();
  io_.stop();
  for (auto& t : io_threads) t.join();
  const bool joined =
      pool_.Join(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  if (!joined) {
    TSR_LOG_WARN(
        "HTTP handler threads are still busy at the shutdown "
        "deadline");
  }
  return joined;
}

void HttpServer::Impl::Stop(std::chrono::seconds force_after) {
  std::vector<std::shared_ptr<HttpConnection>> open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    force_deadline_ = std::chrono::steady_clock::now() + force_after;
    for (auto& [address, weak] : connections_) {
      if (auto connection = weak.lock()) open.push_back(connection);
    }
  }
  asio::post(io_, [this] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
  });
  for (auto& connection : open) connection->Drain();
  cv_.notify_all();
}

HttpServer::HttpServer(ServingContext& ctx)
    : impl_(std::make_unique<Impl>(ctx)) {}
HttpServer::~HttpServer() = default;
Status HttpServer::Bind() { return impl_->Bind(); }
int HttpServer::port() const { return impl_->port(); }
bool HttpServer::Run() { return impl_->Run(); }
void HttpServer::Stop(std::chrono::seconds force_after) {
  impl_->Stop(force_after);
}
size_t HttpServer::open_connections() const {
  return impl_->open_connections();
}

}  // namespace tessera::server
