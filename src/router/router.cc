#include "router/router.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <random>
#include <utility>

#include "base/bounded_json.h"
#include "base/listen_backlog.h"
#include "base/logging.h"
#include "metrics/registry.h"
#include "router/upstream_call.h"

namespace tessera::router {
namespace {

using Json = nlohmann::json;

std::string ErrorBody(const std::string& message, const std::string& type,
                      int code) {
  return Json{{"error",
               {{"message", message}, {"type", type}, {"param", nullptr},
                {"code", code}}}}
      .dump();
}

void SendError(httplib::Response& res, int status, const std::string& message,
               const std::string& type = "server_error") {
  res.status = status;
  res.set_content(ErrorBody(message, type, status), "application/json");
}

// What the cache-aware policy matches on: the prompt text as the client
// sent it.
std::string RequestText(const Json& body) {
  auto text_of = [](const Json& v) -> std::string {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array() || v.is_object()) return v.dump();
    return "";
  };
  if (body.contains("messages") && body["messages"].is_array()) {
    std::string out;
    for (const Json& m : body["messages"]) {
      if (!m.is_object()) continue;
      out += m.value("role", std::string()) + ":";
      if (m.contains("content")) out += text_of(m["content"]);
      out += "\n";
    }
    return out;
  }
  if (body.contains("prompt")) return text_of(body["prompt"]);
  if (body.contains("text")) return text_of(body["text"]);
  if (body.contains("input_ids")) return text_of(body["input_ids"]);
  return "";
}

uint64_t NewRoom() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return gen() >> 1;  // JSON-safe as a non-negative int64
}

}  // namespace

class Router::Impl {
 public:
  Impl(RouterOptions options, std::unique_ptr<WorkerSet> workers)
      : options_(std::move(options)), workers_(std::move(workers)) {}

  Status Init() {
    TSR_ASSIGN_OR_RETURN(requests_, registry_.AddCounter(
        "tessera_router_requests_total", "Requests received, by route.",
        {"route"}));
    TSR_ASSIGN_OR_RETURN(worker_requests_, registry_.AddCounter(
        "tessera_router_worker_requests_total",
        "Requests sent to each worker.", {"worker", "role"}));
    TSR_ASSIGN_OR_RETURN(retries_, registry_.AddCounter(
        "tessera_router_retries_total",
        "Requests sent again after a worker could not be reached."));
    TSR_ASSIGN_OR_RETURN(errors_, registry_.AddCounter(
        "tessera_router_errors_total",
        "Requests answered with an error by the router, by reason.",
        {"reason"}));
    WorkerSet* ws = workers_.get();
    TSR_RETURN_IF_ERROR(registry_.AddCollector(
        "tessera_router_worker_healthy", "1 while a worker is routed to.",
        metrics::MetricType::kGauge, {"worker", "role"},
        [ws](metrics::CollectorSink& sink) {
          for (const auto& w : ws->workers()) {
            sink.Add({w->url(), RoleName(w->role())}, w->healthy() ? 1 : 0);
          }
        }));
    TSR_RETURN_IF_ERROR(registry_.AddCollector(
        "tessera_router_worker_inflight", "Requests in flight per worker.",
        metrics::MetricType::kGauge, {"worker", "role"},
        [ws](metrics::CollectorSink& sink) {
          for (const auto& w : ws->workers()) {
            sink.Add({w->url(), RoleName(w->role())},
                     static_cast<double>(w->inflight()));
          }
        }));

    const int threads = options_.threads;
    server_.new_task_queue = [threads] {
      return new httplib::ThreadPool(static_cast<size_t>(threads));
    };
    // Exclusive bind (httplib's default adds SO_REUSEPORT).
    server_.set_socket_options([](int sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    });
    server_.set_read_timeout(std::chrono::seconds(30));
    server_.set_payload_max_length(64u << 20);
    for (const char* path : {"/v1/completions", "/v1/chat/completions", "/generate"}) {
      server_.Post(path, [this, path](const httplib::Request& req,
                                      httplib::Response& res) {
        requests_->Labels(path).Inc();
        Proxy(path, req, res);
      });
    }
    for (const char* path : {"/v1/models", "/server_info"}) {
      server_.Get(path, [this, path](const httplib::Request& req,
                                     httplib::Response& res) {
        requests_->Labels(path).Inc();
        Forward(path, req, res);
      });
    }
    server_.Get("/health", [this](const httplib::Request&,
                                  httplib::Response& res) {
      const bool ok = Usable();
      res.status = ok ? 200 : 503;
      res.set_content(Json{{"status", ok ? "ok" : "no healthy workers"}}.dump(),
                      "application/json");
    });
    server_.Get("/metrics", [this](const httplib::Request&,
                                   httplib::Response& res) {
      res.set_content(registry_.RenderPrometheus(),
                      "text/plain; version=0.0.4; charset=utf-8");
    });
    server_.Get("/workers", [this](const httplib::Request&,
                                   httplib::Response& res) {
      Json list = Json::array();
      for (const auto& w : workers_->workers()) {
        Json j{{"url", w->url()}, {"role", RoleName(w->role())},
               {"healthy", w->healthy()}, {"inflight", w->inflight()}};
        if (w->role() == WorkerRole::kPrefill) {
          j["bootstrap_port"] = w->bootstrap_port();
        }
        list.push_back(std::move(j));
      }
      res.set_content(Json{{"workers", list}}.dump(), "application/json");
    });

    if (options_.port == 0) {
      port_ = server_.bind_to_any_port(options_.host);
    } else if (server_.bind_to_port(options_.host, options_.port)) {
      port_ = options_.port;
    }
    if (port_ <= 0) {
      return UnavailableError(fmt::format(
          "cannot listen on {}:{}: address already in use or not available; "
          "pick another --port",
          options_.host, options_.port));
    }
    RaiseListenBacklog(port_);
    workers_->StartHealthChecks(
        std::chrono::seconds(std::max(1, options_.health_check_interval_s)),
        std::max(1, options_.health_failure_threshold));
    return OkStatus();
  }

  int port() const { return port_; }
  void Run() { server_.listen_after_bind(); }
  void Stop() { server_.stop(); }

 private:
  bool Usable() const {
    auto any = [this](WorkerRole role) {
      for (Worker* w : workers_->Of(role)) {
        if (w->healthy()) return true;
      }
      return false;
    };
    if (workers_->disaggregated()) {
      return any(WorkerRole::kPrefill) && any(WorkerRole::kDecode);
    }
    return any(WorkerRole::kRegular);
  }

  WorkerRole AnswerRole() const {
    return workers_->disaggregated() ? WorkerRole::kDecode
                                     : WorkerRole::kRegular;
  }

  // GET routes: the first healthy worker's answer.
  void Forward(const std::string& path, const httplib::Request& req,
               httplib::Response& res) {
    Worker* w = workers_->Pick(AnswerRole(), "");
    if (w == nullptr) {
      errors_->Labels("no_worker").Inc();
      return SendError(res, 503, "no healthy worker to answer; see /workers");
    }
    UpstreamCall call;
    call.StartGet(w->host(), w->port(), path,
                  req.get_header_value("Authorization"), std::chrono::seconds(30));
    call.WaitDone();
    if (call.transport_failed()) {
      w->MarkDead(call.error());
      errors_->Labels("upstream").Inc();
      return SendError(res, 502, fmt::format("worker {} did not answer: {}",
                                             w->url(), call.error()));
    }
    res.status = call.status();
    res.set_content(call.TakeData(), call.content_type().empty()
                                         ? "application/json"
                                         : call.content_type());
  }

  void Proxy(const std::string& path, const httplib::Request& req,
             httplib::Response& res) {
    StatusOr<Json> parsed = ParseBoundedJson(req.body);
    if (!parsed.ok() || !parsed->is_object()) {
      errors_->Labels("bad_request").Inc();
      return SendError(res, 400,
                       parsed.ok() ? "the request body must be a JSON object"
                                   : "the request body is not valid JSON: " +
                                         parsed.status().message(),
                       "invalid_request_error");
    }
    Json body = std::move(*parsed);
    const bool stream = body.contains("stream") && body["stream"].is_boolean() &&
                        body["stream"].get<bool>();
    const std::string text = RequestText(body);
    const std::string auth = req.get_header_value("Authorization");
    const bool pd = workers_->disaggregated();
    const auto timeout = std::chrono::seconds(options_.request_timeout_s);
    const Worker* avoid_prefill = nullptr;
    const Worker* avoid_decode = nullptr;
    for (int attempt = 0;; ++attempt) {
      if (attempt > 0) retries_->Get().Inc();
      Worker* decode = workers_->Pick(AnswerRole(), text, avoid_decode);
      Worker* prefill =
          pd ? workers_->Pick(WorkerRole::kPrefill, text, avoid_prefill)
             : nullptr;
      if (decode == nullptr || (pd && prefill == nullptr)) {
        errors_->Labels("no_worker").Inc();
        return SendError(
            res, 503,
            fmt::format("no healthy {} server to route to; see /workers",
                        decode == nullptr ? (pd ? "decode" : "worker")
                                          : "prefill"));
      }
      Json decode_body = body;
      auto prefill_call = std::shared_ptr<UpstreamCall>();
      auto decode_load = std::make_shared<Worker::Load>(decode);
      std::shared_ptr<Worker::Load> prefill_load;
      if (pd) {
        decode_body["bootstrap_host"] = prefill->host();
        decode_body["bootstrap_port"] = prefill->bootstrap_port();
        decode_body["bootstrap_room"] = NewRoom();
        Json prefill_body = decode_body;
        prefill_body["stream"] = false;
        prefill_body.erase("stream_options");
        prefill_call = std::make_shared<UpstreamCall>();
        prefill_load = std::make_shared<Worker::Load>(prefill);
        worker_requests_->Labels(prefill->url(), "prefill").Inc();
        prefill_call->StartPost(prefill->host(), prefill->port(), path,
                                prefill_body.dump(), auth, timeout);
      }
      worker_requests_->Labels(decode->url(), RoleName(decode->role())).Inc();
      auto decode_call = std::make_shared<UpstreamCall>();
      decode_call->StartPost(decode->host(), decode->port(), path,
                             decode_body.dump(), auth, timeout);

      // Until the decode server has answered something: a prefill server
      // that cannot be reached sends the request elsewhere.
      bool retry = false;
      while (!decode_call->has_data() && !decode_call->done()) {
        if (prefill_call && prefill_call->done() &&
            prefill_call->transport_failed()) {
          prefill->MarkDead(prefill_call->error());
          decode_call->Cancel();
          retry = true;
          break;
        }
        if (prefill_call && prefill_call->done() &&
            prefill_call->status() != 200) {
          // The prefill server refused the request or its KV transfer
          // failed: the decode server would wait for the room until its
          // transfer timeout. Hang up on it and answer with the reason.
          decode_call->Cancel();
          decode_call->WaitDone();
          errors_->Labels("prefill").Inc();
          res.status = prefill_call->status();
          const std::string type = prefill_call->content_type();
          res.set_content(prefill_call->TakeData(),
                          type.empty() ? "application/json" : type);
          return;
        }
        decode_call->WaitForData(std::chrono::milliseconds(50));
      }
      if (!retry && decode_call->done() && decode_call->transport_failed() &&
          !decode_call->has_data()) {
        decode->MarkDead(decode_call->error());
        if (prefill_call) prefill_call->Cancel();
        retry = true;
      }
      if (retry) {
        decode_call->WaitDone();
        if (prefill_call) prefill_call->WaitDone();
        if (prefill_call && prefill_call->transport_failed()) {
          avoid_prefill = prefill;
        }
        if (decode_call->transport_failed()) avoid_decode = decode;
        if (attempt < options_.max_retries) continue;
        errors_->Labels("upstream").Inc();
        return SendError(
            res, 502,
            fmt::format("no worker could take the request after {} "
                        "attempts (last: {})",
                        attempt + 1,
                        decode_call->transport_failed()
                            ? decode->url() + ": " + decode_call->error()
                            : prefill->url() + ": " + prefill_call->error()));
      }

      if (!stream || decode_call->status() != 200) {
        decode_call->WaitDone();
        std::string answer = decode_call->TakeData();
        int status = decode_call->status();
        std::string type = decode_call->content_type();
        if (prefill_call) {
          // A decode server that failed never registered (or no longer
          // waits for) the room: give the prefill server a moment to say
          // why, then drop its call so its request ends and frees its
          // pages instead of waiting for the transfer timeout.
          if (status != 200 &&
              !prefill_call->WaitDoneFor(std::chrono::seconds(2))) {
            prefill_call->Cancel();
          }
          prefill_call->WaitDone();
          const int ps = prefill_call->status();
          // The decode server failed and the prefill server says why.
          if ((status == 0 || status >= 500) && ps >= 400 && ps < 500) {
            status = ps;
            answer = prefill_call->TakeData();
            type = prefill_call->content_type();
          }
        }
        if (status == 0) {
          decode->MarkDead(decode_call->error());
          errors_->Labels("upstream").Inc();
          return SendError(res, 502,
                           fmt::format("decode server {} stopped answering: {}",
                                       decode->url(), decode_call->error()));
        }
        res.status = status;
        res.set_content(answer, type.empty() ? "application/json" : type);
        return;
      }
      // Stream the decode server's events as they come.
      res.status = 200;
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [decode_call, decode](size_t, httplib::DataSink& sink) {
            for (;;) {
              std::string data = decode_call->TakeData();
              if (!data.empty()) return sink.write(data.data(), data.size());
              if (decode_call->done()) {
                if (decode_call->status() == 0 ||
                    (decode_call->transport_failed())) {
                  decode->MarkDead(decode_call->error());
                }
                if (!decode_call->error().empty() &&
                    decode_call->error() != "Success") {
                  const std::string event =
                      "data: " +
                      ErrorBody("the decode server stopped answering: " +
                                    decode_call->error(),
                                "server_error", 502) +
                      "\n\n";
                  sink.write(event.data(), event.size());
                }
                sink.done();
                return true;
              }
              if (!sink.is_writable()) return false;
              decode_call->WaitForData(std::chrono::milliseconds(500));
            }
          },
          [decode_call, prefill_call, decode_load, prefill_load](bool ok) {
            // The client left early: stop the decode request (its server
            // aborts it and frees the KV).
            if (!ok) decode_call->Cancel();
            decode_call->WaitDone();
            if (prefill_call) prefill_call->WaitDone();
          });
      return;
    }
  }

  const RouterOptions options_;
  std::unique_ptr<WorkerSet> workers_;
  httplib::Server server_;
  int port_ = 0;
  metrics::Registry registry_;
  metrics::CounterFamily* requests_ = nullptr;
  metrics::CounterFamily* worker_requests_ = nullptr;
  metrics::CounterFamily* retries_ = nullptr;
  metrics::CounterFamily* errors_ = nullptr;
};

Router::Router(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Router::~Router() = default;

StatusOr<std::unique_ptr<Router>> Router::Create(
    RouterOptions options, std::unique_ptr<WorkerSet> workers) {
  auto impl = std::make_unique<Impl>(std::move(options), std::move(workers));
  TSR_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<Router>(new Router(std::move(impl)));
}

int Router::port() const { return impl_->port(); }
void Router::Run() { impl_->Run(); }
void Router::Stop() { impl_->Stop(); }

}  // namespace tessera::router
