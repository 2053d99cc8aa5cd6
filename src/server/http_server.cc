#include "server/http_server.h"

#include <fmt/format.h>

#include "base/logging.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace tessera::server {
namespace {

constexpr size_t kMaxBodyBytes = size_t{64} << 20;

bool IsPublicPath(const std::string& path) {
  return path == "/health" || path == "/health_generate" ||
         path == "/metrics";
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
  RegisterRoutes();
}

void HttpServer::RegisterRoutes() {
  ServingContext& ctx = ctx_;
  server_.set_pre_routing_handler(
      [&ctx](const httplib::Request& req, httplib::Response& res) {
        if (ctx.options.api_key.empty() || IsPublicPath(req.path)) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        const std::string auth = req.get_header_value("Authorization");
        if (auth != "Bearer " + ctx.options.api_key) {
          SendError(res, Unauthorized(
                             auth.empty()
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
        "cannot listen on {}:{} (in use, or not an address of this "
        "machine); pick another with --port or --host",
        host, ctx_.options.port));
  }
  return OkStatus();
}

void HttpServer::Run() { server_.listen_after_bind(); }

void HttpServer::Stop() { server_.stop(); }

}  // namespace tessera::server
