#include "disagg/kv_sender.h"

#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <utility>

#include "base/listen_backlog.h"
#include "base/logging.h"

namespace tessera::disagg {
namespace {

double SecondsBetween(std::chrono::steady_clock::time_point a,
                      std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The completion message a decode server receives (tag = room).
std::string CompletionMessage(const engine::KvSendJob& job, const Status& status,
                              uint64_t bytes, double seconds) {
  Json m{{"room", job.room}, {"ok", status.ok()}, {"bytes", bytes},
         {"seconds", seconds}};
  if (!status.ok()) m["error"] = status.message();
  m["first_token"] = job.first_token;
  if (job.first_logprobs) {
    m["logprob"] = job.first_logprobs->logprob;
    Json top = Json::array();
    for (const auto& [id, lp] : job.first_logprobs->top) top.push_back({id, lp});
    m["top"] = std::move(top);
  }
  return m.dump();
}

// The error of a prefill job whose decode server's registration was refused.
Status RefusedError(const std::string& why) {
  return FailedPreconditionError(
      fmt::format("the decode server's registration was refused: {}", why));
}

}  // namespace

UcxKvSender::UcxKvSender(const kv::KvPool& pool, KvLayout layout,
                         double timeout_s)
    : pool_(pool), layout_(std::move(layout)), timeout_s_(timeout_s) {}

UcxKvSender::~UcxKvSender() {
  if (server_) server_->stop();
  if (server_thread_.joinable()) server_thread_.join();
  ucx_.reset();  // fails writes in flight (their callbacks touch done_)
}

StatusOr<std::unique_ptr<UcxKvSender>> UcxKvSender::Create(
    const kv::KvPool& pool, KvLayout layout, const std::string& host, int port,
    double timeout_s) {
  TSR_RETURN_IF_ERROR(CheckHostAddressable(pool));
  std::unique_ptr<UcxKvSender> s(
      new UcxKvSender(pool, std::move(layout), timeout_s));
  TSR_ASSIGN_OR_RETURN(s->ucx_, UcxTransfer::Create());
  s->server_ = std::make_unique<httplib::Server>();
  s->server_->new_task_queue = [] { return new httplib::ThreadPool(32); };
  // Exclusive bind (httplib's default adds SO_REUSEPORT, which would let a
  // second server share the port).
  s->server_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  UcxKvSender* self = s.get();
  s->server_->Get("/disagg/info", [self](const httplib::Request&,
                                         httplib::Response& res) {
    res.set_content(self->layout_.ToJson().dump(), "application/json");
  });
  s->server_->Post("/disagg/register", [self](const httplib::Request& req,
                                              httplib::Response& res) {
    auto [code, error] = self->Register(req.body);
    res.status = code;
    res.set_content(error.empty() ? Json{{"ok", true}}.dump()
                                  : Json{{"error", error}}.dump(),
                    "application/json");
  });
  if (port == 0) {
    s->port_ = s->server_->bind_to_any_port(host);
  } else if (s->server_->bind_to_port(host, port)) {
    s->port_ = port;
  }
  if (s->port_ <= 0) {
    return UnavailableError(fmt::format(
        "cannot listen on {}:{} for the disaggregation bootstrap service "
        "(address already in use?); pick another "
        "--disaggregation-bootstrap-port",
        host, port));
  }
  RaiseListenBacklog(s->port_);
  s->server_thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  TSR_LOG_INFO("disaggregation: bootstrap service on {}:{}, KV over {}", host,
               s->port_, s->ucx_->TransportSummary());
  return s;
}

std::pair<int, std::string> UcxKvSender::Register(const std::string& body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return {400, "the registration is not a JSON object"};
  Registration r;
  uint64_t room = 0;
  try {
    room = j.at("room").get<uint64_t>();
    StatusOr<KvLayout> layout = KvLayout::FromJson(j.at("layout"));
    if (!layout.ok()) return {400, layout.status().message()};
    r.layout = *layout;
    const std::string mismatch = LayoutMismatch(layout_, r.layout);
    if (!mismatch.empty()) {
      TSR_LOG_WARN("disaggregation: refused room {}: {}", room, mismatch);
      Refuse(room, mismatch);
      return {409, mismatch};
    }
    StatusOr<std::string> addr = FromHex(j.at("worker_address").get<std::string>());
    if (!addr.ok()) return {400, "worker_address: " + addr.status().message()};
    r.worker_address = std::move(*addr);
    const std::string host_id = j.value("host_id", std::string());
    r.same_host = !host_id.empty() && host_id == UcxTransfer::HostId();
    for (const Json& g : j.at("regions")) {
      RemoteRegion region;
      region.address = g.at("address").get<uint64_t>();
      region.length = g.at("length").get<uint64_t>();
      StatusOr<std::string> rkey = FromHex(g.at("rkey").get<std::string>());
      if (!rkey.ok()) return {400, "rkey: " + rkey.status().message()};
      region.rkey = std::move(*rkey);
      // The decode side's registration index (what a rendezvous chunk
      // names); older decode servers published none: their list order.
      region.id = g.value("id", static_cast<uint32_t>(r.regions.size()));
      r.regions.push_back(std::move(region));
    }
    if (static_cast<int64_t>(r.regions.size()) != 2 * layout_.num_layers) {
      return {400, fmt::format("expected {} KV regions (K and V per layer), "
                               "got {}",
                               2 * layout_.num_layers, r.regions.size())};
    }
    r.prompt_len = j.at("prompt_len").get<int64_t>();
    r.prompt_hash = j.at("prompt_hash").get<uint64_t>();
    r.cached = j.at("cached").get<int64_t>();
    r.slots = j.at("slots").get<std::vector<int32_t>>();
    if (r.cached < 0 || r.cached > r.prompt_len ||
        static_cast<int64_t>(r.slots.size()) != r.prompt_len - r.cached) {
      return {400, "slots must list one slot per uncached prompt position"};
    }
    const double expires_in = j.at("expires_in_s").get<double>();
    r.expires = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(expires_in));
  } catch (const std::exception& e) {
    const std::string why = fmt::format("malformed registration: {}", e.what());
    if (j.contains("room") && j["room"].is_number_unsigned()) {
      Refuse(j["room"].get<uint64_t>(), why);
    }
    return {400, why};
  }
  std::optional<WriteJob> write;
  {
    MutexLock lock(&mu_);
    if (registrations_.count(room) != 0) {
      return {409, fmt::format("bootstrap room {} is already registered", room)};
    }
    registrations_.emplace(room, std::move(r));
    write = MaybeStart(room);
  }
  if (write) ucx_->Write(std::move(*write));
  return {200, ""};
}

void UcxKvSender::Refuse(uint64_t room, const std::string& why) {
  const auto now = Clock::now();
  MutexLock lock(&mu_);
  auto p = pending_.find(room);
  if (p != pending_.end()) {
    done_.push_back({room, RefusedError(why), 0, std::nullopt, 0,
                     SecondsBetween(p->second.start, now)});
    pending_.erase(p);
    return;
  }
  refused_[room] = Refused{
      why, now + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(timeout_s_))};
}

bool UcxKvSender::Cancel(uint64_t room) {
  MutexLock lock(&mu_);
  // Pending: no registration yet, so no write. Once both halves met, the
  // write was queued (MaybeStart) and reports through done_.
  return pending_.erase(room) != 0;
}

void UcxKvSender::Send(engine::KvSendJob job) {
  const auto now = Clock::now();
  std::optional<WriteJob> write;
  {
    MutexLock lock(&mu_);
    const uint64_t room = job.room;
    if (auto r = refused_.find(room); r != refused_.end()) {
      done_.push_back({room, RefusedError(r->second.why), job.first_token,
                       std::nullopt, 0, 0});
      refused_.erase(r);
      return;
    }
    Pending p;
    p.job = std::move(job);
    p.start = now;
    p.deadline = now + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(timeout_s_));
    pending_[room] = std::move(p);
    write = MaybeStart(room);
  }
  if (write) ucx_->Write(std::move(*write));
}

std::optional<WriteJob> UcxKvSender::MaybeStart(uint64_t room) {
  auto r = registrations_.find(room);
  auto p = pending_.find(room);
  if (r == registrations_.end() || p == pending_.end()) return std::nullopt;
  Registration reg = std::move(r->second);
  Pending pend = std::move(p->second);
  registrations_.erase(r);
  pending_.erase(p);

  const engine::KvSendJob& job = pend.job;
  Status plan_status;
  std::vector<PutOp> puts;
  uint64_t bytes = 0;
  const int64_t len = static_cast<int64_t>(job.prompt_ids.size());
  if (reg.prompt_len != len || reg.prompt_hash != PromptHash(job.prompt_ids)) {
    plan_status = InvalidArgumentError(fmt::format(
        "the decode server holds a different prompt for room {} ({} tokens "
        "there, {} here); both servers must receive the same request and "
        "tokenize it alike",
        room, reg.prompt_len, len));
  } else {
    // The decode side's slots cover positions cached..; pad the front so
    // both lists index positions.
    std::vector<int32_t> dst(static_cast<size_t>(reg.cached), 0);
    dst.insert(dst.end(), reg.slots.begin(), reg.slots.end());
    StatusOr<std::vector<PutOp>> planned =
        PlanPuts(pool_, reg.layout, job.slots, dst, reg.cached, &bytes);
    if (planned.ok()) {
      puts = std::move(*planned);
    } else {
      plan_status = planned.status();
    }
  }
  WriteJob w;
  w.peer_address = reg.worker_address;
  w.same_host = reg.same_host;
  // On this host UCX reads rendezvous chunks with CMA (one copy) but
  // emulates puts through shared memory (two): see ucx_transfer.h.
  w.method = reg.same_host ? WriteMethod::kRendezvous : WriteMethod::kRma;
  w.regions = std::move(reg.regions);
  w.tag = room;
  w.deadline = std::min(pend.deadline, reg.expires);
  const auto start = pend.start;
  if (!plan_status.ok()) {
    // Tell the decode side at once (no puts), and fail here.
    w.message = CompletionMessage(job, plan_status, 0, 0);
    done_.push_back({room, plan_status, job.first_token, std::nullopt, 0, 0});
    w.done = [](Status) {};
    return w;
  }
  w.puts = std::move(puts);
  w.message = CompletionMessage(job, OkStatus(), bytes,
                                SecondsBetween(start, Clock::now()));
  const int32_t first = job.first_token;
  // Seconds on the wire: from queueing the puts to the peer's flush and
  // completion (a job that waited for its registration does not count
  // that wait).
  const auto wire_start = Clock::now();
  w.done = [this, room, bytes, wire_start, first](Status status) {
    MutexLock lock(&mu_);
    done_.push_back({room, std::move(status), first, std::nullopt, bytes,
                     SecondsBetween(wire_start, Clock::now())});
  };
  return w;
}

std::vector<engine::KvTransferResult> UcxKvSender::Poll() {
  const auto now = Clock::now();
  MutexLock lock(&mu_);
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now < it->second.deadline) {
      ++it;
      continue;
    }
    done_.push_back({it->first,
                     UnavailableError(fmt::format(
                         "no decode server registered bootstrap room {} "
                         "within {:.0f} s",
                         it->first, timeout_s_)),
                     0, std::nullopt, 0, SecondsBetween(it->second.start, now)});
    it = pending_.erase(it);
  }
  for (auto it = registrations_.begin(); it != registrations_.end();) {
    if (now < it->second.expires) {
      ++it;
      continue;
    }
    TSR_LOG_WARN("disaggregation: room {} registered by a decode server "
                 "expired before its prefill request arrived",
                 it->first);
    it = registrations_.erase(it);
  }
  for (auto it = refused_.begin(); it != refused_.end();) {
    it = now < it->second.expires ? std::next(it) : refused_.erase(it);
  }
  std::vector<engine::KvTransferResult> out;
  out.swap(done_);
  return out;
}

}  // namespace tessera::disagg
