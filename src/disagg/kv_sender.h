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
// A room starts once both halves are here: the engine's KvBeginJob (the
// step completing the prompt is scheduled) and the registration. Then a
// streaming thread waits for each layer's KV (engine::LayerProgress: the
// device event after that layer) and queues that layer's writes, so layer
// l is on the wire while the device computes layer l + 1 — rendezvous
// chunks to a decode server on this host, one-sided puts and a flush
// elsewhere (ucx_transfer.h). When every layer's writes are done and the
// engine's KvSendJob brought the first token, a completion message {room,
// ok, first_token, logprob, top, bytes, seconds} (tag = room) follows. A
// prompt whose hash or length differs from the decode side's is refused
// and reported to both. A room with no registration after --disaggregation-
// transfer-timeout fails; a registration with no job expires. A cancelled
// room whose writes have started stops streaming, tells the decode side
// (ok = false) and is reported once its writes are done.
//
// Thread-safety: Begin, Send, Cancel and Poll from the scheduler thread;
// the bootstrap service's threads, the streaming thread and UCX's
// completion callbacks share the maps under mu_.
#ifndef TESSERA_DISAGG_KV_SENDER_H_
#define TESSERA_DISAGG_KV_SENDER_H_

#include <chrono>
#include <deque>
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

  void Begin(engine::KvBeginJob job) override;
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
  // One room on this side, from Begin (or a Send without one) to its
  // report.
  struct Room {
    std::vector<int32_t> prompt_ids;
    std::vector<int32_t> slots;
    std::shared_ptr<engine::LayerProgress> layers;
    Clock::time_point start;
    Clock::time_point deadline;  // for its registration
    bool have_first = false;     // Send arrived
    int32_t first_token = 0;
    std::optional<engine::TokenLogprobs> first_logprobs;
    // Once its registration met it (or it failed without one).
    bool started = false;
    WriteJob base;  // peer, method, regions, deadline; no puts
    std::vector<std::vector<PutOp>> layer_puts;  // [layer]
    uint64_t bytes = 0;
    int64_t posted = 0;         // layers whose writes are queued
    bool posting_done = false;  // all posted, or stopped (error, cancel)
    int64_t outstanding = 0;    // queued layer writes not done yet
    Clock::time_point busy_since;
    double wire_seconds = 0;    // while layer writes were outstanding
    Status error;               // the first failure
    bool cancelled = false;     // Cancel came after writes started
    bool completing = false;    // the completion is queued
  };

  UcxKvSender(const kv::KvPool& pool, KvLayout layout, double timeout_s);
  // POST /disagg/register: "" or the error, with its HTTP status.
  std::pair<int, std::string> Register(const std::string& body);
  // Records a refused registration of `room` and fails its room if begun.
  void Refuse(uint64_t room, const std::string& why);
  // A Begin or a Send without one: the room, or the refusal waiting for it.
  Room& NewRoom(uint64_t room, std::vector<int32_t> prompt_ids,
                std::vector<int32_t> slots,
                std::shared_ptr<engine::LayerProgress> layers) TSR_REQUIRES(mu_);
  // Plans the room's writes when both halves are here and hands it to the
  // streaming thread. The caller queues what it returns after releasing mu_
  // (a stopped transfer engine fails it inline).
  std::optional<WriteJob> MaybeStart(uint64_t room) TSR_REQUIRES(mu_);
  // The completion of a room whose layer writes are all done and whose
  // first token (or cancellation) is here: its message job (the room is
  // reported when the message is sent), or nothing (reported already, when
  // there is no peer to tell).
  std::optional<WriteJob> MaybeComplete(uint64_t room) TSR_REQUIRES(mu_);
  // A layer write finished (progress thread).
  void OnLayerWritten(uint64_t room, Status status);
  // The streaming thread: posts each started room's layers in order.
  void StreamLayers();

  const kv::KvPool& pool_;
  const KvLayout layout_;
  const double timeout_s_;
  std::unique_ptr<UcxTransfer> ucx_;
  std::unique_ptr<httplib::Server> server_;
  std::thread server_thread_;
  int port_ = 0;

  Mutex mu_;
  std::map<uint64_t, Registration> registrations_ TSR_GUARDED_BY(mu_);
  std::map<uint64_t, Room> rooms_ TSR_GUARDED_BY(mu_);
  std::deque<uint64_t> to_stream_ TSR_GUARDED_BY(mu_);  // started rooms
  CondVar stream_cv_;
  bool stopping_ TSR_GUARDED_BY(mu_) = false;
  std::thread streamer_;
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
