#include "stream.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <new>

namespace tessera::cpu {
namespace {

// How often a blocked worker re-checks its cancel flag.
constexpr auto kCancelPoll = std::chrono::milliseconds(5);

}  // namespace

uint64_t StreamCore::Enqueued() {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;
}

Status StreamCore::StatusAtLocked(uint64_t gen) {
  if (!sticky_.ok() && sticky_gen_ <= gen) return sticky_;
  if (completed_ < gen) return Status(TSR_ERR_NOT_READY, "work still pending");
  return OkStatus();
}

Status StreamCore::StatusAt(uint64_t gen) {
  std::lock_guard<std::mutex> lock(mu_);
  return StatusAtLocked(gen);
}

Status StreamCore::WaitFor(uint64_t gen) {
  std::unique_lock<std::mutex> lock(mu_);
  while (completed_ < gen) {
    wake_at_ = std::min(wake_at_, gen);
    done_cv_.wait(lock);
  }
  return StatusAtLocked(gen);
}

Status StreamCore::WaitForCancellable(uint64_t gen,
                                      const std::atomic<bool>& cancel) {
  std::unique_lock<std::mutex> lock(mu_);
  while (completed_ < gen) {
    if (cancel.load(std::memory_order_relaxed)) {
      return InvalidArgument(
          "the stream was destroyed while it waited for an event of another "
          "stream; synchronize streams before destroying them");
    }
    wake_at_ = std::min(wake_at_, gen);
    done_cv_.wait_for(lock, kCancelPoll);
  }
  return OkStatus();
}

Stream::Stream(int device, ThreadPool* pool)
    : device_(device), pool_(pool), core_(std::make_shared<StreamCore>()) {
  worker_ = std::thread([this] { WorkerLoop(); });
  if (pool_ != nullptr) pool_->Pin(worker_);  // the device's CPU set, if any
}

Stream::~Stream() { Close(); }

Status Stream::Enqueue(std::string what, WorkFn fn) {
  StreamCore& core = *core_;
  {
    std::lock_guard<std::mutex> lock(core.mu_);
    if (stop_) {
      return InvalidHandle("the stream is being destroyed; no work can be queued");
    }
    if (capture_ != nullptr) {
      capture_->push_back(Item{0, std::move(what), std::move(fn)});
      return OkStatus();
    }
    uint64_t gen = ++core.enqueued_;
    queue_.push_back(Item{gen, std::move(what), std::move(fn)});
  }
  core.work_cv_.notify_one();  // only the worker waits on it
  return OkStatus();
}

Status Stream::BeginCapture() {
  std::lock_guard<std::mutex> lock(core_->mu_);
  if (capture_ != nullptr) {
    return InvalidArgument("begin_capture: the stream is already capturing; end that capture "
                           "first");
  }
  capture_ = std::make_unique<std::vector<Item>>();
  return OkStatus();
}

Status Stream::EndCapture(std::shared_ptr<Graph>* out) {
  std::unique_ptr<std::vector<Item>> items;
  {
    std::lock_guard<std::mutex> lock(core_->mu_);
    if (capture_ == nullptr) {
      return InvalidArgument("end_capture: the stream is not capturing; call begin_capture first");
    }
    items = std::move(capture_);
  }
  std::vector<std::pair<std::string, WorkFn>> work;
  work.reserve(items->size());
  for (Item& item : *items) work.emplace_back(std::move(item.what), std::move(item.fn));
  *out = std::make_shared<Graph>(device_, std::move(work));
  return OkStatus();
}

bool Stream::capturing() {
  std::lock_guard<std::mutex> lock(core_->mu_);
  return capture_ != nullptr;
}

Status Graph::Launch(Stream& stream) const {
  if (stream.device() != device_) {
    return InvalidArgument("graph launch: the graph was captured on device ", device_,
                           " but the stream is on device ", stream.device());
  }
  if (stream.capturing()) {
    return InvalidArgument("graph launch: the stream is capturing; graphs do not nest");
  }
  // The item holds the graph (and through it every captured buffer) until
  // it has run, even if the host destroys the graph meanwhile.
  return stream.Enqueue("graph", [graph = shared_from_this()](ExecContext& ctx) -> Status {
    for (const auto& [what, fn] : graph->items_) {
      Status status = fn(ctx);
      if (!status.ok()) {
        return Status(status.code(), StrCat("graph item ", what, ": ", status.message()));
      }
    }
    return OkStatus();
  });
}

Status Stream::Synchronize() {
  uint64_t gen = core_->Enqueued();
  Status status = core_->WaitFor(gen);
  if (status.ok()) return status;
  return Status(status.code(), StrCat("an earlier operation on this stream failed: ",
                                      status.message()));
}

Status Stream::Query() {
  uint64_t gen = core_->Enqueued();
  Status status = core_->StatusAt(gen);
  if (status.ok() || status.code() == TSR_ERR_NOT_READY) return status;
  return Status(status.code(), StrCat("an earlier operation on this stream failed: ",
                                      status.message()));
}

void Stream::WorkerLoop() {
  StreamCore& core = *core_;
  ExecContext ctx;
  ctx.device = device_;
  ctx.pool = pool_;
  ctx.cancel = &cancel_;
  for (;;) {
    Item item;
    bool failed;
    {
      std::unique_lock<std::mutex> lock(core.mu_);
      core.work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      item = std::move(queue_.front());
      queue_.pop_front();
      failed = !core.sticky_.ok();
    }
    Status status;
    const auto start = std::chrono::steady_clock::now();
    if (!failed) {
      try {
        status = item.fn(ctx);
      } catch (const std::bad_alloc&) {
        status = OutOfMemory("ran out of host memory while running; free buffers or shrink the work");
      } catch (const std::exception& e) {
        status = Internal("unexpected exception: ", e.what());
      } catch (...) {
        status = Internal("unexpected exception");
      }
    }
    item.fn = nullptr;  // release captured state before publishing progress
    if (!failed) {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now() - start);
      // Published before completion, so a waiter sees it once work is done.
      core.busy_ns_.fetch_add(static_cast<uint64_t>(ns.count()), std::memory_order_release);
    }
    bool wake = false;
    {
      std::lock_guard<std::mutex> lock(core.mu_);
      if (!status.ok() && core.sticky_.ok()) {
        core.sticky_ = Status(status.code(), StrCat(item.what, ": ", status.message()));
        core.sticky_gen_ = item.gen;
      }
      core.completed_ = item.gen;
      // Wake waiters only when one of them is done (not once per item).
      if (core.completed_ >= core.wake_at_) {
        core.wake_at_ = UINT64_MAX;
        wake = true;
      }
    }
    if (wake) core.done_cv_.notify_all();
  }
}

void Stream::RequestClose() { cancel_.store(true); }

void Stream::Close() {
  std::call_once(joined_, [this] {
    RequestClose();
    {
      std::lock_guard<std::mutex> lock(core_->mu_);
      stop_ = true;
    }
    core_->work_cv_.notify_all();
    if (worker_.joinable()) worker_.join();
  });
}

void Event::Record(const Stream& stream) {
  uint64_t gen = stream.core()->Enqueued();
  std::lock_guard<std::mutex> lock(mu_);
  core_ = stream.core();
  gen_ = gen;
}

std::pair<std::shared_ptr<StreamCore>, uint64_t> Event::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  return {core_, gen_};
}

Status Event::Query() {
  auto [core, gen] = Snapshot();
  if (core == nullptr) return OkStatus();
  return core->StatusAt(gen);
}

Status Event::Synchronize() {
  auto [core, gen] = Snapshot();
  if (core == nullptr) return OkStatus();
  return core->WaitFor(gen);
}

}  // namespace tessera::cpu
