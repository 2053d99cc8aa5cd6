// KvTransfer: moves whole KV pages between the device pool and the host
// pool (HiCache's L1 <-> L2) on dedicated copy streams, one thread per
// direction, so the scheduler thread only queues jobs and collects acks.
//
//   backup  device -> host   (write-through after a prefill, write-back at
//                              eviction) on the backup thread's stream;
//   load    host -> device   (a request's prefix found on the host) on the
//                              load thread's stream.
//
// A job is a list of (device page, host page) pairs. The worker issues one
// copy per (layer, K/V, head) and run of pages that are consecutive on both
// sides (layer_first hosts coalesce; page_first ones move a page's segments
// one by one), then synchronises its stream and posts an ack. Jobs of one
// direction complete in submission order.
//
// Ordering contract (the caller's): a backed-up device page must hold its
// final K/V before Submit (the scheduler backs up pages of steps already
// collected, and nothing writes a cached page again), and neither side's
// pages may be freed or reused until the job's ack. A loaded device page
// must not be read by a step before the ack.
//
// Thread-safety: Submit, PollDone, Wait* and the statistics may be called
// from any thread (one mutex guards the queues); the worker threads own
// their streams. The destructor finishes every queued job, then joins.
#ifndef TESSERA_KV_KV_TRANSFER_H_
#define TESSERA_KV_KV_TRANSFER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "kv/host_kv_pool.h"
#include "kv/kv_pool.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tessera::kv {

enum class TransferDirection { kBackup = 0, kLoad = 1 };

struct PageCopy {
  int32_t device_page = 0;
  int32_t host_page = 0;
};

struct TransferDone {
  TransferDirection direction = TransferDirection::kBackup;
  uint64_t id = 0;
  Status status;          // a failed copy: the pages' contents are unknown
  uint64_t bytes = 0;     // moved by this job
  double seconds = 0;     // from submission to ack
};

// Totals per direction since creation.
struct TransferTotals {
  uint64_t jobs = 0;
  uint64_t pages = 0;
  uint64_t bytes = 0;
  double seconds = 0;  // summed job latency (submission to ack)
};

class KvTransfer {
 public:
  // Creates the two copy streams and starts the threads.
  static StatusOr<std::unique_ptr<KvTransfer>> Create(runtime::Device& device,
                                                      const KvPool& device_pool,
                                                      HostKvPool& host_pool);
  ~KvTransfer();
  KvTransfer(const KvTransfer&) = delete;
  KvTransfer& operator=(const KvTransfer&) = delete;

  // Queues a job; returns its id (increasing per direction, from 1).
  uint64_t Submit(TransferDirection direction, std::vector<PageCopy> pages)
      TSR_EXCLUDES(mu_);
  // Acks posted since the last call, oldest first.
  std::vector<TransferDone> PollDone() TSR_EXCLUDES(mu_);
  // Blocks until every job of `direction` submitted so far has finished
  // (its ack is still returned by PollDone).
  void WaitIdle(TransferDirection direction) TSR_EXCLUDES(mu_);
  // Jobs of `direction` queued or running.
  int64_t Pending(TransferDirection direction) const TSR_EXCLUDES(mu_);
  TransferTotals Totals(TransferDirection direction) const TSR_EXCLUDES(mu_);

 private:
  struct Job {
    uint64_t id = 0;
    std::vector<PageCopy> pages;
    uint64_t submitted_ns = 0;
  };
  struct Lane {  // one direction
    std::deque<Job> queue;
    uint64_t next_id = 1;
    uint64_t finished_id = 0;  // every job <= this has been acked
    TransferTotals totals;
  };

  KvTransfer(const KvPool& device_pool, HostKvPool& host_pool)
      : device_pool_(device_pool), host_pool_(host_pool) {}
  void Worker(TransferDirection direction, runtime::Stream* stream);
  // Issues the copies of `pages` on `stream` and waits for them.
  Status Copy(TransferDirection direction, runtime::Stream& stream,
              const std::vector<PageCopy>& pages) const;

  const KvPool& device_pool_;
  HostKvPool& host_pool_;
  runtime::StreamPtr streams_[2];

  mutable Mutex mu_;
  CondVar cv_;  // a queue, stop_ or finished_id changed
  Lane lanes_[2] TSR_GUARDED_BY(mu_);
  std::vector<TransferDone> done_ TSR_GUARDED_BY(mu_);
  bool stop_ TSR_GUARDED_BY(mu_) = false;
  std::thread threads_[2];
};

}  // namespace tessera::kv

#endif  // TESSERA_KV_KV_TRANSFER_H_
