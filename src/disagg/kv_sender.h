// UcxKvSender: the prefill server's side of PD disaggregation — the
// bootstrap service decode servers register with, and the KV writes.
//
// Bootstrap service (SGLang's bootstrap host/port/room scheme; HTTP on
// --disaggregation-bootstrap-port, cpp-httplib):
//   GET  /disagg/info      this side's KvLayout
//   POST /disagg/register  a decode server's room: {room, layout,
//        worker_address, host_id (optional; equal to ours: shared memory
//        reaches it), regions [{address, length, rkey, id}] (its slabs K0,
//        V0, K1, ...), prompt_len, prompt_hash, cached, slots (positions
//        cached.. of the prompt), expires_in_s}. 409 naming both sides'
//        values when the layouts differ; 400 when malformed.
// A room is written once both halves are here: the engine's KvSendJob
// (prompt computed, first token sampled) and the registration. Then every
// put (rendezvous chunks to a decode server on this host, one-sided puts
// and a flush elsewhere) and a completion message {room, ok, first_token, logprob,
// top, bytes, seconds} (tag = room) go out over UCX (ucx_transfer.h); a
// prompt whose hash or length differs from the decode side's is refused
// and reported to both. A job with no registration after --disaggregation-
// transfer-timeout fails; a registration with no job expires.
//
// Thread-safety: Send and Poll from the scheduler thread; the bootstrap
// service's threads and UCX's completion callbacks share the maps under
// mu_.
#ifndef TESSERA_DISAGG_KV_SENDER_H_
#define TESSERA_DISAGG_KV_SENDER_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "disagg/kv_layout.h"
#include "disagg/ucx_transfer.h"
#include "engine/disagg.h"
#include "kv/kv_pool.h"

namespace httplib {
class Server;
}

namespace tessera::disagg {

class UcxKvSender : public engine::KvSender {
 public:
  // Starts UCX and the bootstrap service on host:port (0: any free port).
  // Unavailable naming the port when it is in use.
  static StatusOr<std::unique_ptr<UcxKvSender>> Create(
      const kv::KvPool& pool, KvLayout layout, const std::string& host,
      int port, double timeout_s);
  ~UcxKvSender() override;

  void Send(engine::KvSendJob job) override;
  std::vector<engine::KvTransferResult> Poll() override;
  bool Cancel(uint64_t room) override;

  int port() const { return port_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Registration {
    std::string worker_address;
    bool same_host = false;  // its host_id equals ours
    std::vector<RemoteRegion> regions;
    KvLayout layout;
    int64_t prompt_len = 0;
    uint64_t prompt_hash = 0;
    int64_t cached = 0;
    std::vector<int32_t> slots;  // positions cached.. of the prompt
    Clock::time_point expires;
  };
  struct Pending {
    engine::KvSendJob job;
    Clock::time_point deadline;
    Clock::time_point start;
  };

  UcxKvSender(const kv::KvPool& pool, KvLayout layout, double timeout_s);
  // POST /disagg/register: "" or the error, with its HTTP status.
  std::pair<int, std::string> Register(const std::string& body);
  // Records a refused registration of `room` and fails its job if queued.
  void Refuse(uint64_t room, const std::string& why);
  // The write of `room` when both halves are here (the caller queues it
  // after releasing mu_: a stopped transfer engine fails it inline).
  std::optional<WriteJob> MaybeStart(uint64_t room) TSR_REQUIRES(mu_);

  const kv::KvPool& pool_;
  const KvLayout layout_;
  const double timeout_s_;
  std::unique_ptr<UcxTransfer> ucx_;
  std::unique_ptr<httplib::Server> server_;
  std::thread server_thread_;
  int port_ = 0;

  Mutex mu_;
  std::map<uint64_t, Registration> registrations_ TSR_GUARDED_BY(mu_);
  std::map<uint64_t, Pending> pending_ TSR_GUARDED_BY(mu_);
  // Rooms whose registration was refused (layouts differ, malformed): the
  // prefill request of such a room fails at once instead of waiting for the
  // transfer timeout. Kept for the timeout, then forgotten.
  struct Refused {
    std::string why;
    Clock::time_point expires;
  };
  std::map<uint64_t, Refused> refused_ TSR_GUARDED_BY(mu_);
  std::vector<engine::KvTransferResult> done_ TSR_GUARDED_BY(mu_);
};

}  // namespace tessera::disagg

#endif  // TESSERA_DISAGG_KV_SENDER_H_
