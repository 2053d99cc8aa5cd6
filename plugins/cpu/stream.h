// Streams and events of the cpu plugin.
//
// A Stream is an in-order queue of work items run by one dedicated worker
// thread; Enqueue() returns at once (launches never block the caller). Each
// item gets the next generation number; the worker publishes the highest
// completed generation in the stream's StreamCore, which events and waiting
// streams share (an event is just (core, generation)).
//
// Errors: the first failing item's Status becomes the stream's sticky error;
// the worker then skips (but still completes, in order) every later item.
// The sticky error stays until the stream is destroyed, like CUDA's sticky
// errors: stream_synchronize, stream_query and the status of any event
// recorded after the failure keep returning it. Events recorded before the
// failure stay OK. A stream waiting on another stream's event only waits;
// the other stream's error does not propagate.
//
// Blocking inside a work item (an event wait, a collective rendezvous) polls
// the stream's cancel flag, which Close() raises, so destroying a stream or
// shutting down can never hang on a peer that will not come.
//
// Waiting: the worker sleeps on work_cv_; host threads waiting for a
// generation (synchronize, event waits) sleep on done_cv_ and are woken
// only once the smallest generation any of them waits for completes, not
// after every item (a decode step enqueues hundreds).
//
// Graphs (the ABI's optional graph table): between BeginCapture and
// EndCapture, Enqueue records its work item instead of queueing it. The
// items are what a launch leaves after its synchronous part — argument
// checks, buffer resolution and kernel selection all happened at capture —
// so a Graph replays them as ONE queued item on any stream of its device,
// reading the captured buffers' contents at replay time. While a stream
// captures, nothing else may wait on it or order against it: synchronize,
// query, event_record and stream_wait_event on it fail (InvalidArgument).
//
// Thread-safety: all members are thread-safe. The ABI promises one host
// thread per stream at a time; nothing here relies on it.
#ifndef TESSERA_PLUGINS_CPU_STREAM_H_
#define TESSERA_PLUGINS_CPU_STREAM_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kit_names.h"
#include "thread_pool.h"

namespace tessera::cpu {

// What a running work item may use.
struct ExecContext {
  int device = 0;
  ThreadPool* pool = nullptr;
  // Raised when the stream is being destroyed; long waits must give up.
  const std::atomic<bool>* cancel = nullptr;
  bool cancelled() const { return cancel->load(std::memory_order_relaxed); }
};

using WorkFn = std::function<Status(ExecContext&)>;

// The progress of one stream, shared by its events and waiters.
class StreamCore {
 public:
  // The generation of the last enqueued item (what an event captures).
  uint64_t Enqueued();
  // TSR_ERR_NOT_READY while items <= gen are pending; the sticky error if an
  // item <= gen failed; OK otherwise.
  Status StatusAt(uint64_t gen);
  // Blocks the calling host thread until items <= gen completed; returns
  // StatusAt(gen).
  Status WaitFor(uint64_t gen);
  // Like WaitFor, from a worker thread: gives up when `cancel` rises.
  Status WaitForCancellable(uint64_t gen, const std::atomic<bool>& cancel);
  // Nanoseconds the worker spent running items that finished (skipped
  // items after a failure count nothing).
  uint64_t BusyNs() const { return busy_ns_.load(std::memory_order_acquire); }

 private:
  friend class Stream;
  Status StatusAtLocked(uint64_t gen);

  std::mutex mu_;
  std::condition_variable work_cv_;  // the worker: work queued or stop
  std::condition_variable done_cv_;  // waiters: wake_at_ reached
  // The smallest generation a waiter waits for (UINT64_MAX: none); the
  // worker notifies done_cv_ only when completed_ reaches it.
  uint64_t wake_at_ = UINT64_MAX;     // guarded by mu_
  uint64_t enqueued_ = 0;     // guarded by mu_
  uint64_t completed_ = 0;    // guarded by mu_
  Status sticky_;             // guarded by mu_
  uint64_t sticky_gen_ = 0;   // guarded by mu_: generation that failed
  std::atomic<uint64_t> busy_ns_{0};  // written by the worker only
};

class Stream {
 public:
  Stream(int device, ThreadPool* pool);
  ~Stream();  // Close()
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  const std::shared_ptr<StreamCore>& core() const { return core_; }

  // Appends `fn` (named `what` in error messages); returns at once. While
  // capturing, records it instead.
  Status Enqueue(std::string what, WorkFn fn);

  // Graph capture (see the file comment). BeginCapture fails when already
  // capturing; EndCapture when not.
  Status BeginCapture();
  Status EndCapture(std::shared_ptr<class Graph>* out);
  bool capturing();
  // Waits for everything enqueued so far; returns the sticky error.
  Status Synchronize();
  // OK idle, NOT_READY pending, or the sticky error.
  Status Query();

  // Raises the cancel flag (without waiting); Close() then joins.
  void RequestClose();
  // Runs what is queued (blocking waits give up), then stops the worker.
  void Close();

 private:
  struct Item {
    uint64_t gen;
    std::string what;
    WorkFn fn;
  };
  void WorkerLoop();

  const int device_;
  ThreadPool* const pool_;
  std::shared_ptr<StreamCore> core_;
  std::atomic<bool> cancel_{false};
  std::deque<Item> queue_;  // guarded by core_->mu_
  bool stop_ = false;       // guarded by core_->mu_
  // The items recorded since BeginCapture (null: not capturing).
  std::unique_ptr<std::vector<Item>> capture_;  // guarded by core_->mu_
  std::thread worker_;
  std::once_flag joined_;
};

// A captured sequence of work items of one device; immutable, replayed by
// Launch as one item on a stream of that device. The items hold the
// buffers they use alive.
class Graph : public std::enable_shared_from_this<Graph> {
 public:
  Graph(int device, std::vector<std::pair<std::string, WorkFn>> items)
      : device_(device), items_(std::move(items)) {}
  int device() const { return device_; }
  size_t size() const { return items_.size(); }
  // Enqueues the whole graph on `stream` as one item.
  Status Launch(Stream& stream) const;

 private:
  const int device_;
  const std::vector<std::pair<std::string, WorkFn>> items_;
};

// A marker recorded on a stream: (core, generation). Never recorded = done.
class Event {
 public:
  explicit Event(int device) : device_(device) {}
  int device() const { return device_; }

  void Record(const Stream& stream);
  // The current capture (core may be null: never recorded).
  std::pair<std::shared_ptr<StreamCore>, uint64_t> Snapshot();
  Status Query();
  Status Synchronize();

 private:
  const int device_;
  std::mutex mu_;
  std::shared_ptr<StreamCore> core_;  // guarded by mu_
  uint64_t gen_ = 0;                  // guarded by mu_
};

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_STREAM_H_
