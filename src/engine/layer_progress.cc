#include "engine/layer_progress.h"

#include <fmt/format.h>

#include <utility>

namespace tessera::engine {

void LayerProgress::Attach(Waiter waiter) {
  MutexLock lock(&mu_);
  if (finished_ || was_attached_) return;
  waiter_ = std::move(waiter);
  was_attached_ = true;
  cv_.SignalAll();
}

void LayerProgress::Finish(Status status) {
  Waiter dropped;
  {
    MutexLock lock(&mu_);
    if (finished_) return;
    finished_ = true;
    final_ = std::move(status);
    cv_.SignalAll();
    while (waiting_calls_ > 0) cv_.Wait(&mu_);
    dropped = std::move(waiter_);
    waiter_ = nullptr;
  }
  // `dropped` (and the events it holds) goes here, outside the lock.
}

bool LayerProgress::attached() const {
  MutexLock lock(&mu_);
  return was_attached_;
}

Status LayerProgress::WaitForLayer(
    int64_t l, std::chrono::steady_clock::time_point deadline) {
  if (l < 0 || l >= num_layers_) {
    return InvalidArgumentError(
        fmt::format("layer {} outside [0, {})", l, num_layers_));
  }
  Waiter waiter;
  {
    MutexLock lock(&mu_);
    while (!finished_ && !waiter_) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        return UnavailableError(fmt::format(
            "layer {} of the prompt's KV was not written in time", l));
      }
      cv_.WaitFor(&mu_, deadline - now);
    }
    if (finished_) return final_;
    ++waiting_calls_;
    waiter = waiter_;  // a copy: Finish clears the member once we are done
  }
  Status s = waiter(l);
  waiter = nullptr;  // before Finish may release what it holds
  MutexLock lock(&mu_);
  --waiting_calls_;
  cv_.SignalAll();
  return s;
}

}  // namespace tessera::engine
