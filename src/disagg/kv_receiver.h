// UcxKvReceiver: the decode server's side of PD disaggregation. Its KV slabs
// are registered with UCX once; for every request it registers the room's
// pages with the prefill server's bootstrap service (kv_sender.h) and waits
// for the completion message, which arrives after every put is in place.
//
//   Expect(job)   queue the registration (a worker thread POSTs it, so the
//                 scheduler never waits on the network);
//   Poll()        rooms finished: written (first token attached), refused
//                 by the prefill side (layout or prompt mismatch, with its
//                 message), unreachable, or timed out after
//                 --disaggregation-transfer-timeout (a prefill server that
//                 died mid-transfer) — each room once.
//
// Thread-safety: Expect and Poll from the scheduler thread; the
// registration thread and UCX's message handler share the maps under mu_.
#ifndef TESSERA_DISAGG_KV_RECEIVER_H_
#define TESSERA_DISAGG_KV_RECEIVER_H_

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "disagg/kv_layout.h"
#include "disagg/ucx_transfer.h"
#include "engine/disagg.h"
#include "kv/kv_pool.h"

namespace tessera::disagg {

class UcxKvReceiver : public engine::KvReceiver {
 public:
  static StatusOr<std::unique_ptr<UcxKvReceiver>> Create(
      const kv::KvPool& pool, KvLayout layout, double timeout_s);
  ~UcxKvReceiver() override;

  void Expect(engine::KvRecvJob job) override;
  std::vector<engine::KvTransferResult> Poll() override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Waiting {
    Clock::time_point start;
    Clock::time_point deadline;
  };

  UcxKvReceiver(KvLayout layout, double timeout_s);
  void RegisterLoop();
  void OnMessage(uint64_t tag, const std::string& message);
  void Fail(uint64_t room, Status status) TSR_EXCLUDES(mu_);

  const KvLayout layout_;
  const double timeout_s_;
  std::unique_ptr<UcxTransfer> ucx_;
  std::vector<RemoteRegion> regions_;  // K0, V0, K1, ...
  std::vector<std::thread> threads_;   // registration workers

  Mutex mu_;
  CondVar cv_;
  std::deque<engine::KvRecvJob> to_register_ TSR_GUARDED_BY(mu_);
  std::map<uint64_t, Waiting> waiting_ TSR_GUARDED_BY(mu_);
  std::vector<engine::KvTransferResult> done_ TSR_GUARDED_BY(mu_);
  bool stop_ TSR_GUARDED_BY(mu_) = false;
};

}  // namespace tessera::disagg

#endif  // TESSERA_DISAGG_KV_RECEIVER_H_
