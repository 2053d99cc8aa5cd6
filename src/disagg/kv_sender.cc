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
std::string CompletionMessage(uint64_t room, const Status& status,
                              int32_t first_token,
                              const std::optional<engine::TokenLogprobs>& logprobs,
                              uint64_t bytes, double seconds) {
  Json m{{"room", room}, {"ok", status.ok()}, {"bytes", bytes},
         {"seconds", seconds}};
  if (!status.ok()) m["error"] = status.message();
  m["first_token"] = first_token;
  if (logprobs) {
    m["logprob"] = logprobs->logprob;
    Json top = Json::array();
    for (const auto& [id, lp] : logprobs->top) top.push_back({id, lp});
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
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  stream_cv_.SignalAll();
  if (streamer_.joinable()) streamer_.join();
  ucx_.reset();  // fails writes in flight (their callbacks touch rooms_)
}

StatusOr<std::unique_ptr<UcxKvSender>> UcxKvSender::Create(
    const kv::KvPool& pool, KvLayout layout, const std::string& host, int port,
    double timeout_s) {
  TSR_RETURN_IF_ERROR(CheckHostAddressable(pool));
  std::unique_ptr<UcxKvSender> s(
      new UcxKvSender(pool, std::move(layout), timeout_s));
  TSR_ASSIGN_OR_RETURN(s->ucx_, UcxTransfer::Create());
  s->streamer_ = std::thread([self = s.get()] { self->StreamLayers(); });
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
  std::optional<WriteJob> write;
  {
    MutexLock lock(&mu_);
    auto it = rooms_.find(room);
    if (it != rooms_.end() && !it->second.started) {
      Room& r = it->second;
      r.error = RefusedError(why);
      r.started = true;  // with no peer: nothing is written
      r.posting_done = true;
      write = MaybeComplete(room);
    } else {
      refused_[room] = Refused{
          why, now + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeout_s_))};
    }
  }
  if (write) ucx_->Write(std::move(*write));
}

UcxKvSender::Room& UcxKvSender::NewRoom(
    uint64_t room, std::vector<int32_t> prompt_ids, std::vector<int32_t> slots,
    std::shared_ptr<engine::LayerProgress> layers) {
  const auto now = Clock::now();
  Room& r = rooms_[room];
  r.prompt_ids = std::move(prompt_ids);
  r.slots = std::move(slots);
  r.layers = std::move(layers);
  r.start = now;
  r.deadline = now + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(timeout_s_));
  if (auto f = refused_.find(room); f != refused_.end()) {
    r.error = RefusedError(f->second.why);
    r.started = true;
    r.posting_done = true;
    refused_.erase(f);
  }
  return r;
}

void UcxKvSender::Begin(engine::KvBeginJob job) {
  std::optional<WriteJob> write;
  {
    MutexLock lock(&mu_);
    if (rooms_.count(job.room) != 0) return;  // a room is begun once
    NewRoom(job.room, std::move(job.prompt_ids), std::move(job.slots),
            std::move(job.layers));
    write = MaybeStart(job.room);
  }
  if (write) ucx_->Write(std::move(*write));
}

void UcxKvSender::Send(engine::KvSendJob job) {
  std::optional<WriteJob> write;
  {
    MutexLock lock(&mu_);
    auto it = rooms_.find(job.room);
    if (it == rooms_.end()) {
      // No Begin: the KV is all written already.
      auto written = std::make_shared<engine::LayerProgress>(layout_.num_layers);
      written->Finish(OkStatus());
      NewRoom(job.room, std::move(job.prompt_ids), std::move(job.slots),
              std::move(written));
      it = rooms_.find(job.room);
    }
    Room& r = it->second;
    r.have_first = true;
    r.first_token = job.first_token;
    r.first_logprobs = std::move(job.first_logprobs);
    write = MaybeStart(job.room);
    if (!write) write = MaybeComplete(job.room);
  }
  if (write) ucx_->Write(std::move(*write));
}

bool UcxKvSender::Cancel(uint64_t room) {
  std::optional<WriteJob> write;
  {
    MutexLock lock(&mu_);
    auto it = rooms_.find(room);
    if (it == rooms_.end()) return false;  // reported or about to be
    Room& r = it->second;
    if (!r.completing && r.posted == 0 && r.outstanding == 0) {
      // Nothing written yet (the streaming thread, if it waits for this
      // room's first layer, finds it gone).
      rooms_.erase(it);
      return true;
    }
    r.cancelled = true;
    write = MaybeComplete(room);
  }
  if (write) ucx_->Write(std::move(*write));
  return false;
}

std::optional<WriteJob> UcxKvSender::MaybeStart(uint64_t room) {
  auto it = rooms_.find(room);
  auto reg_it = registrations_.find(room);
  if (it == rooms_.end() || it->second.started || reg_it == registrations_.end()) {
    return std::nullopt;
  }
  Room& r = it->second;
  Registration reg = std::move(reg_it->second);
  registrations_.erase(reg_it);
  r.started = true;
  r.base.peer_address = reg.worker_address;
  r.base.same_host = reg.same_host;
  // On this host UCX reads rendezvous chunks with CMA (one copy) but
  // emulates puts through shared memory (two): see ucx_transfer.h.
  r.base.method = reg.same_host ? WriteMethod::kRendezvous : WriteMethod::kRma;
  r.base.regions = std::move(reg.regions);
  r.base.tag = room;
  r.base.deadline = std::min(r.deadline, reg.expires);
  const int64_t len = static_cast<int64_t>(r.prompt_ids.size());
  if (reg.prompt_len != len || reg.prompt_hash != PromptHash(r.prompt_ids)) {
    r.error = InvalidArgumentError(fmt::format(
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
        PlanPuts(pool_, reg.layout, r.slots, dst, reg.cached, &r.bytes);
    if (planned.ok()) {
      // Regions are K0, V0, K1, V1, ...: a put's layer is region / 2.
      r.layer_puts.assign(static_cast<size_t>(layout_.num_layers), {});
      for (const PutOp& op : *planned) {
        r.layer_puts[op.region / 2].push_back(op);
      }
    } else {
      r.error = planned.status();
    }
  }
  if (!r.error.ok()) {
    r.posting_done = true;  // nothing to write; tell the peer at completion
    return MaybeComplete(room);
  }
  to_stream_.push_back(room);
  stream_cv_.SignalAll();
  return std::nullopt;
}

std::optional<WriteJob> UcxKvSender::MaybeComplete(uint64_t room) {
  auto it = rooms_.find(room);
  if (it == rooms_.end()) return std::nullopt;
  Room& r = it->second;
  if (!r.started || !r.posting_done || r.outstanding > 0 || r.completing ||
      !(r.have_first || r.cancelled)) {
    return std::nullopt;
  }
  r.completing = true;
  Status status = r.error;
  if (status.ok() && r.cancelled) {
    status = AbortedError("the prefill request ended before its KV was sent");
  }
  const uint64_t bytes = status.ok() ? r.bytes : 0;
  const double wire = r.wire_seconds;
  const double total = SecondsBetween(r.start, Clock::now());
  if (r.base.peer_address.empty()) {  // no decode server to tell
    done_.push_back({room, std::move(status), r.first_token, std::nullopt, 0,
                     total});
    rooms_.erase(it);
    return std::nullopt;
  }
  WriteJob w;
  w.peer_address = r.base.peer_address;
  w.same_host = r.base.same_host;
  w.method = r.base.method;
  w.regions = r.base.regions;
  w.tag = room;
  w.message = CompletionMessage(room, status, r.first_token, r.first_logprobs,
                                bytes, total);
  // The message goes even after the writes' deadline (the peer frees its
  // pages sooner on a failure it hears of).
  w.deadline = std::max(r.base.deadline, Clock::now() + std::chrono::seconds(5));
  const int32_t first = r.first_token;
  w.done = [this, room, status, bytes, wire, first](Status sent) {
    MutexLock lock(&mu_);
    done_.push_back({room, status.ok() ? std::move(sent) : status, first,
                     std::nullopt, bytes, wire});
  };
  rooms_.erase(it);
  return w;
}

void UcxKvSender::OnLayerWritten(uint64_t room, Status status) {
  std::optional<WriteJob> write;
  {
    MutexLock lock(&mu_);
    auto it = rooms_.find(room);
    if (it == rooms_.end()) return;
    Room& r = it->second;
    if (--r.outstanding == 0) {
      r.wire_seconds += SecondsBetween(r.busy_since, Clock::now());
    }
    if (!status.ok() && r.error.ok()) r.error = std::move(status);
    write = MaybeComplete(room);
  }
  if (write) ucx_->Write(std::move(*write));
}

void UcxKvSender::StreamLayers() {
  // Explicit Lock/Unlock: mu_ is released around each wait and write.
  mu_.Lock();
  while (!stopping_) {
    if (to_stream_.empty()) {
      stream_cv_.Wait(&mu_);
      continue;
    }
    const uint64_t room = to_stream_.front();
    auto it = rooms_.find(room);
    if (it == rooms_.end()) {  // cancelled before its first write
      to_stream_.pop_front();
      continue;
    }
    Room& r = it->second;
    if (!r.error.ok() || r.cancelled ||
        r.posted == static_cast<int64_t>(r.layer_puts.size())) {
      r.posting_done = true;
      to_stream_.pop_front();
      std::optional<WriteJob> write = MaybeComplete(room);
      if (write) {
        mu_.Unlock();
        ucx_->Write(std::move(*write));
        mu_.Lock();
      }
      continue;
    }
    const int64_t l = r.posted;
    std::shared_ptr<engine::LayerProgress> layers = r.layers;
    const auto deadline = r.base.deadline;
    mu_.Unlock();
    Status ready = layers->WaitForLayer(l, deadline);
    mu_.Lock();
    it = rooms_.find(room);
    if (it == rooms_.end()) continue;  // cancelled meanwhile (front again)
    Room& now = it->second;
    if (!ready.ok()) {
      if (now.error.ok()) now.error = std::move(ready);
      continue;
    }
    ++now.posted;
    std::vector<PutOp> puts = std::move(now.layer_puts[static_cast<size_t>(l)]);
    if (puts.empty()) continue;  // every position of it cached there
    if (now.outstanding++ == 0) now.busy_since = Clock::now();
    WriteJob w;
    w.peer_address = now.base.peer_address;
    w.same_host = now.base.same_host;
    w.method = now.base.method;
    w.regions = now.base.regions;
    w.puts = std::move(puts);
    w.tag = room;
    w.deadline = now.base.deadline;
    w.done = [this, room](Status s) { OnLayerWritten(room, std::move(s)); };
    mu_.Unlock();
    ucx_->Write(std::move(w));
    mu_.Lock();
  }
  mu_.Unlock();
}

std::vector<engine::KvTransferResult> UcxKvSender::Poll() {
  const auto now = Clock::now();
  std::vector<WriteJob> writes;
  std::vector<engine::KvTransferResult> out;
  {
    MutexLock lock(&mu_);
    for (auto& [room, r] : rooms_) {
      if (r.started || now < r.deadline) continue;
      r.error = UnavailableError(fmt::format(
          "no decode server registered bootstrap room {} within {:.0f} s",
          room, timeout_s_));
      r.started = true;  // with no peer: reported at its Send or Cancel
      r.posting_done = true;
    }
    for (auto it = rooms_.begin(); it != rooms_.end();) {
      const uint64_t room = it->first;
      ++it;  // MaybeComplete may erase the room
      if (std::optional<WriteJob> w = MaybeComplete(room)) {
        writes.push_back(std::move(*w));
      }
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
    out.swap(done_);
  }
  for (WriteJob& w : writes) ucx_->Write(std::move(w));
  return out;
}

}  // namespace tessera::disagg
