#include "server/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "base/constant_time.h"
#include "base/logging.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace tessera::server {
namespace {

constexpr size_t kMaxBodyBytes = size_t{64} << 20;

// Debian's libcpp-httplib 0.11.4 listens with a backlog of 5 (compiled in,
// CPPHTTPLIB_LISTEN_BACKLOG), so a burst of connections (a benchmark, 256
// clients at once) overflows the accept queue and the kernel drops them.
// httplib gives no access to its socket: find our listening socket among
// the process's descriptors and listen() on it again with a real backlog
// (Linux applies the new value to a listening socket).
void RaiseListenBacklog(int port) {
  constexpr int kBacklog = 4096;
  for (int fd = 0; fd < 4096; ++fd) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
        !listening) {
      continue;
    }
    sockaddr_storage addr{};
    socklen_t addr_len = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) {
      continue;
    }
    int bound = -1;
    if (addr.ss_family == AF_INET) {
      bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      bound = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    }
    if (bound == port && ::listen(fd, kBacklog) != 0) {
      TSR_LOG_WARN("could not raise the listen backlog: {}",
                   std::strerror(errno));
    }
  }
}

// The listening socket is exclusive: SO_REUSEADDR (restart while old
// connections linger in TIME_WAIT) but not httplib's default SO_REUSEPORT,
// with which a second server on the same port starts and the kernel splits
// the traffic between the two.
void ExclusiveSocketOptions(int sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// Why host:port cannot be bound, in the kernel's words ("Address already
// in use"), found by binding a probe socket the same way httplib does.
std::string BindFailureReason(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
      rc != 0) {
    return fmt::format("'{}' is not an address of this machine ({})", host,
                       gai_strerror(rc));
  }
  std::string reason = "unknown reason";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int sock = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (sock < 0) continue;
    ExclusiveSocketOptions(sock);
    if (::bind(sock, a->ai_addr, a->ai_addrlen) != 0) {
      reason = std::strerror(errno);
      ::close(sock);
      break;
    }
    ::close(sock);
  }
  freeaddrinfo(found);
  for (char& c : reason) c = static_cast<char>(std::tolower(c));
  return reason;
}

bool IsPublicPath(const std::string& path) {
  return path == "/health" || path == "/health_generate" || path == "/metrics";
}

}  // namespace

HttpServer::HttpServer(ServingContext& ctx) : ctx_(ctx) {
  const int threads = std::max(ctx.options.http_threads, 8);
  server_.new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  server_.set_payload_max_length(kMaxBodyBytes);
  server_.set_keep_alive_max_count(10000);
  server_.set_read_timeout(60, 0);
  server_.set_write_timeout(60, 0);
  server_.set_tcp_nodelay(true);
  server_.set_socket_options(ExclusiveSocketOptions);
  RegisterRoutes();
}

void HttpServer::RegisterRoutes() {
  ServingContext& ctx = ctx_;
  server_.set_pre_routing_handler([&ctx](const httplib::Request& req,
                                         httplib::Response& res) {
    if (!ctx.ready.load(std::memory_order_acquire)) {
      SendError(res,
                ServiceUnavailable("the model is still loading; retry when "
                                   "/health answers 200"));
      return httplib::Server::HandlerResponse::Handled;
    }
    if (ctx.options.api_key.empty() || IsPublicPath(req.path)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (req.get_header_value_count("Authorization") > 1) {
      SendError(res, Unauthorized("more than one Authorization header; send "
                                  "exactly one 'Authorization: Bearer <key>'"));
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string auth = req.get_header_value("Authorization");
    if (!ConstantTimeEquals(auth, "Bearer " + ctx.options.api_key)) {
      SendError(res, Unauthorized(auth.empty()
                                      ? "missing API key: send 'Authorization: "
                                        "Bearer <key>' (the server was started "
                                        "with --api-key)"
                                      : "incorrect API key provided"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server_.set_error_handler(httplib::Server::HandlerWithResponse(
      [](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty() || res.is_chunked_content_provider_) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        if (res.status == 404) {
          SendError(res, NotFound(fmt::format("no route {} {}; see "
                                              "docs/ARCHITECTURE.md for the "
                                              "endpoints",
                                              req.method, req.path)));
        } else if (res.status == 413) {
          SendError(res, ApiError{413, "the request body is too large",
                                  "invalid_request_error", "", ""});
        } else if (res.status == 405) {
          SendError(res, ApiError{405, "method not allowed",
                                  "invalid_request_error", "", ""});
        }
        return httplib::Server::HandlerResponse::Handled;
      }));
  server_.set_exception_handler([](const httplib::Request& req,
                                   httplib::Response& res,
                                   std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    TSR_LOG_ERROR("{} {} failed: {}", req.method, req.path, what);
    SendError(res, InternalServerError("internal error: " + what));
  });

  auto bind = [&ctx](void (*fn)(ServingContext&, const httplib::Request&,
                                httplib::Response&)) {
    return [&ctx, fn](const httplib::Request& req, httplib::Response& res) {
      fn(ctx, req, res);
    };
  };
  server_.Post("/v1/completions", bind(HandleCompletions));
  server_.Post("/v1/chat/completions", bind(HandleChatCompletions));
  server_.Get("/v1/models", bind(HandleModels));
  server_.Post("/generate", bind(HandleGenerate));
  server_.Post("/tokenize", bind(HandleTokenize));
  server_.Post("/detokenize", bind(HandleDetokenize));
  server_.Get("/health", bind(HandleHealth));
  server_.Get("/health_generate", bind(HandleHealthGenerate));
  server_.Get("/server_info", bind(HandleServerInfo));
  server_.Get("/get_server_info", bind(HandleServerInfo));
  server_.Post("/flush_cache", bind(HandleFlushCache));
  server_.Get("/flush_cache", bind(HandleFlushCache));
  server_.Post("/abort_request", bind(HandleAbortRequest));
  server_.Get("/metrics", bind(HandleMetrics));
}

Status HttpServer::Bind() {
  const std::string& host = ctx_.options.host;
  if (ctx_.options.port == 0) {
    port_ = server_.bind_to_any_port(host);
    if (port_ < 0) port_ = 0;
  } else if (server_.bind_to_port(host, ctx_.options.port)) {
    port_ = ctx_.options.port;
  }
  if (port_ <= 0) {
    return UnavailableError(fmt::format(
        "cannot listen on {}:{}: {}; is another server running there? pick "
        "another with --port or --host",
        host, ctx_.options.port, BindFailureReason(host, ctx_.options.port)));
  }
  RaiseListenBacklog(port_);
  return OkStatus();
}

void HttpServer::Run() { server_.listen_after_bind(); }

void HttpServer::Stop() { server_.stop(); }

}  // namespace tessera::server
