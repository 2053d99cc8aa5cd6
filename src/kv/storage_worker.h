// StorageWorker: the storage tier's thread. The scheduler thread hands it
// page writes (backed-up host pages, copied) and prefetches (keys of a
// prompt's pages past what the device and host hold) and polls for the
// prefetched pages; the worker alone talks to the backend, so a slow or
// vanished backend never blocks a scheduler step.
//
//   Write     encodes each payload as a page object and Puts it; failures
//             count (storage_failures) and log a warning (at most one per
//             10 s); writes beyond kMaxQueuedWriteBytes are dropped and
//             counted, so memory stays bounded when the backend is slow;
//   Prefetch  CountPresent, then Get + DecodePageObject page by page, up
//             to the first page that is missing, unreadable or corrupt
//             (corrupt_pages counts those): the result is always a verified
//             prefix of the keys asked for.
//
// Thread-safety: every method may be called from any thread. The
// destructor drops queued writes and prefetches and joins.
#ifndef TESSERA_KV_STORAGE_WORKER_H_
#define TESSERA_KV_STORAGE_WORKER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "kv/kv_storage.h"
#include "kv/page_object.h"

namespace tessera::kv {

struct PrefetchResult {
  uint64_t id = 0;
  std::vector<std::vector<uint8_t>> payloads;  // verified, keys[0, n)
  double seconds = 0;
};

struct StorageTotals {
  int64_t pages_written = 0;
  int64_t pages_read = 0;  // verified pages prefetched
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;
  int64_t failures = 0;       // backend errors (writes and reads)
  int64_t corrupt_pages = 0;  // objects refused by DecodePageObject
  int64_t dropped_writes = 0;  // pages not written: the queue was full
  double read_seconds = 0;     // summed prefetch latency
};

class StorageWorker {
 public:
  static constexpr uint64_t kMaxQueuedWriteBytes = 256ull << 20;

  StorageWorker(std::unique_ptr<KvStorage> backend, uint64_t identity,
                int32_t page_size, uint64_t payload_bytes);
  ~StorageWorker();
  StorageWorker(const StorageWorker&) = delete;
  StorageWorker& operator=(const StorageWorker&) = delete;

  void Write(std::vector<PageKey> keys,
             std::vector<std::vector<uint8_t>> payloads) TSR_EXCLUDES(mu_);
  uint64_t Prefetch(std::vector<PageKey> keys) TSR_EXCLUDES(mu_);
  std::vector<PrefetchResult> PollPrefetched() TSR_EXCLUDES(mu_);
  // Runs after everything queued before it; waits for it.
  Status Clear() TSR_EXCLUDES(mu_);
  void WaitIdle() TSR_EXCLUDES(mu_);
  // WaitIdle for at most `seconds`; false when work was still queued.
  bool WaitIdleFor(double seconds) TSR_EXCLUDES(mu_);

  StorageTotals Totals() const TSR_EXCLUDES(mu_);
  const KvStorage& backend() const { return *backend_; }
  uint64_t identity() const { return identity_; }

 private:
  struct Job {
    enum Kind { kWrite, kPrefetch, kClear } kind = kWrite;
    uint64_t id = 0;
    std::vector<PageKey> keys;
    std::vector<std::vector<uint8_t>> payloads;  // writes
    uint64_t bytes = 0;
    uint64_t submitted_ns = 0;
  };
  void Run();
  void DoWrite(Job& job);
  PrefetchResult DoPrefetch(const Job& job);
  void Failed(const Status& status);

  std::unique_ptr<KvStorage> backend_;
  const uint64_t identity_;
  const int32_t page_size_;
  const uint64_t payload_bytes_;

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Job> queue_ TSR_GUARDED_BY(mu_);
  uint64_t queued_write_bytes_ TSR_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ TSR_GUARDED_BY(mu_) = 1;
  bool busy_ TSR_GUARDED_BY(mu_) = false;
  bool stop_ TSR_GUARDED_BY(mu_) = false;
  std::vector<PrefetchResult> done_ TSR_GUARDED_BY(mu_);
  Status clear_status_ TSR_GUARDED_BY(mu_);
  uint64_t clears_done_ TSR_GUARDED_BY(mu_) = 0;
  StorageTotals totals_ TSR_GUARDED_BY(mu_);
  uint64_t last_warning_ns_ TSR_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace tessera::kv

#endif  // TESSERA_KV_STORAGE_WORKER_H_
