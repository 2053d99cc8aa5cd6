#include "disagg/kv_receiver.h"

#include <fmt/format.h>
#include <httplib.h>

#include <utility>

#include "base/logging.h"

namespace tessera::disagg {
namespace {

// Registrations in flight at once (a slow or dead prefill server must not
// hold up the others).
constexpr int kRegisterThreads = 4;
constexpr int kRegisterAttempts = 5;  // 50 ms .. 800 ms apart

}  // namespace

UcxKvReceiver::UcxKvReceiver(KvLayout layout, double timeout_s)
    : layout_(std::move(layout)), timeout_s_(timeout_s) {}

UcxKvReceiver::~UcxKvReceiver() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  for (std::thread& t : threads_) t.join();
  ucx_.reset();
}

StatusOr<std::unique_ptr<UcxKvReceiver>> UcxKvReceiver::Create(
    const kv::KvPool& pool, KvLayout layout, double timeout_s) {
  std::unique_ptr<UcxKvReceiver> r(
      new UcxKvReceiver(std::move(layout), timeout_s));
  TSR_ASSIGN_OR_RETURN(r->ucx_, UcxTransfer::Create());
  TSR_ASSIGN_OR_RETURN(r->regions_, RegisterPool(*r->ucx_, pool));
  UcxKvReceiver* self = r.get();
  r->ucx_->SetMessageHandler([self](uint64_t tag, std::string message) {
    self->OnMessage(tag, message);
  });
  for (int i = 0; i < kRegisterThreads; ++i) {
    r->threads_.emplace_back([self] { self->RegisterLoop(); });
  }
  TSR_LOG_INFO("disaggregation: decode side, KV pool registered with UCX "
               "({} regions, {})",
               r->regions_.size(), r->ucx_->TransportSummary());
  return r;
}

void UcxKvReceiver::Expect(engine::KvRecvJob job) {
  const auto now = Clock::now();
  {
    MutexLock lock(&mu_);
    waiting_[job.bootstrap.room] = Waiting{
        now, now + std::chrono::duration_cast<Clock::duration>(
                       std::chrono::duration<double>(timeout_s_))};
    to_register_.push_back(std::move(job));
    // Set from the scheduler thread only (Expect, Poll): never while the
    // destructor tears the transfer engine down.
    ucx_->SetExpecting(true);
  }
  cv_.Signal();
}

void UcxKvReceiver::Fail(uint64_t room, Status status) {
  MutexLock lock(&mu_);
  auto it = waiting_.find(room);
  if (it == waiting_.end()) return;  // already reported
  done_.push_back({room, std::move(status), 0, std::nullopt, 0,
                   std::chrono::duration<double>(Clock::now() - it->second.start)
                       .count()});
  waiting_.erase(it);
}

void UcxKvReceiver::RegisterLoop() {
  for (;;) {
    engine::KvRecvJob job;
    double expires_in = 0;
    {
      MutexLock lock(&mu_);
      while (to_register_.empty() && !stop_) cv_.Wait(&mu_);
      if (stop_) return;
      job = std::move(to_register_.front());
      to_register_.pop_front();
      auto it = waiting_.find(job.bootstrap.room);
      if (it == waiting_.end()) continue;
      expires_in = std::chrono::duration<double>(it->second.deadline -
                                                 Clock::now())
                       .count();
    }
    const uint64_t room = job.bootstrap.room;
    Json body{{"room", room},
              {"layout", layout_.ToJson()},
              {"worker_address", ToHex(ucx_->WorkerAddress())},
              {"host_id", UcxTransfer::HostId()},
              {"prompt_len", job.prompt_ids.size()},
              {"prompt_hash", PromptHash(job.prompt_ids)},
              {"cached", job.cached},
              {"expires_in_s", std::max(0.0, expires_in)}};
    Json regions = Json::array();
    for (const RemoteRegion& r : regions_) {
      regions.push_back(
          {{"address", r.address}, {"length", r.length}, {"rkey", ToHex(r.rkey)},
           {"id", r.id}});
    }
    body["regions"] = std::move(regions);
    body["slots"] = std::vector<int32_t>(
        job.slots.begin() + static_cast<std::ptrdiff_t>(job.cached),
        job.slots.end());
    // A refused or dropped connection is tried again (a burst of
    // registrations, a prefill server still starting) for a few seconds.
    const std::string payload = body.dump();
    auto post = [&job, &payload] {
      httplib::Client client(job.bootstrap.host, job.bootstrap.port);
      client.set_connection_timeout(std::chrono::seconds(3));
      client.set_read_timeout(std::chrono::seconds(10));
      return client.Post("/disagg/register", payload, "application/json");
    };
    httplib::Result res = post();
    for (int attempt = 1; !res && attempt < kRegisterAttempts; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50 << attempt));
      res = post();
    }
    const std::string where =
        fmt::format("{}:{}", job.bootstrap.host, job.bootstrap.port);
    if (!res) {
      Fail(room, UnavailableError(fmt::format(
                     "cannot reach the prefill server's bootstrap service at "
                     "{} ({})",
                     where, httplib::to_string(res.error()))));
      continue;
    }
    if (res->status != 200) {
      Json err = Json::parse(res->body, nullptr, false);
      const std::string why = err.is_object() && err.contains("error")
                                  ? err["error"].get<std::string>()
                                  : res->body;
      Fail(room, FailedPreconditionError(fmt::format(
                     "the prefill server at {} refused room {}: {}", where,
                     room, why)));
    }
  }
}

void UcxKvReceiver::OnMessage(uint64_t tag, const std::string& message) {
  Json m = Json::parse(message, nullptr, false);
  if (!m.is_object()) {
    TSR_LOG_WARN("disaggregation: malformed completion for room {}", tag);
    Fail(tag, DataLossError("malformed completion message from the prefill "
                            "server"));
    return;
  }
  engine::KvTransferResult r;
  r.room = tag;
  try {
    if (!m.at("ok").get<bool>()) {
      r.status = FailedPreconditionError(m.value("error", std::string("failed")));
    }
    r.first_token = m.at("first_token").get<int32_t>();
    r.bytes = m.value("bytes", uint64_t{0});
    if (m.contains("logprob")) {
      engine::TokenLogprobs lp;
      lp.id = r.first_token;
      lp.logprob = m["logprob"].get<float>();
      for (const Json& t : m.value("top", Json::array())) {
        lp.top.emplace_back(t[0].get<int32_t>(), t[1].get<float>());
      }
      r.first_logprobs = std::move(lp);
    }
  } catch (const std::exception& e) {
    Fail(tag, DataLossError(fmt::format(
                  "malformed completion message from the prefill server: {}",
                  e.what())));
    return;
  }
  MutexLock lock(&mu_);
  auto it = waiting_.find(tag);
  if (it == waiting_.end()) return;  // timed out earlier: already reported
  r.seconds =
      std::chrono::duration<double>(Clock::now() - it->second.start).count();
  waiting_.erase(it);
  done_.push_back(std::move(r));
}

std::vector<engine::KvTransferResult> UcxKvReceiver::Poll() {
  const auto now = Clock::now();
  MutexLock lock(&mu_);
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (now < it->second.deadline) {
      ++it;
      continue;
    }
    done_.push_back(
        {it->first,
         UnavailableError(fmt::format(
             "no KV from the prefill server for room {} within {:.0f} s "
             "(--disaggregation-transfer-timeout); its pages are freed",
             it->first, timeout_s_)),
         0, std::nullopt, 0,
         std::chrono::duration<double>(now - it->second.start).count()});
    it = waiting_.erase(it);
  }
  ucx_->SetExpecting(!waiting_.empty());
  std::vector<engine::KvTransferResult> out;
  out.swap(done_);
  return out;
}

}  // namespace tessera::disagg
