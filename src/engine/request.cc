#include "engine/request.h"

namespace tessera::engine {

void RequestStream::Push(RequestOutput output) {
  std::shared_ptr<const std::function<void()>> listener;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_.load()) return;
    if (output.finished) finished_.store(true);
    pending_.push_back(std::move(output));
    listener = listener_;
  }
  cv_.notify_all();
  if (listener) (*listener)();
}

void RequestStream::SetListener(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::make_shared<const std::function<void()>>(std::move(listener));
}

std::vector<RequestOutput> RequestStream::Wait(
    std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !pending_.empty(); });
  std::vector<RequestOutput> out(std::make_move_iterator(pending_.begin()),
                                 std::make_move_iterator(pending_.end()));
  pending_.clear();
  return out;
}

RequestOutput RequestStream::WaitFinal() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !pending_.empty() && pending_.back().finished; });
  RequestOutput last = std::move(pending_.back());
  pending_.clear();
  return last;
}

void RequestStream::Cancel(AbortCause cause, std::string why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_.load()) return;
  cancel_cause_ = cause;
  cancel_reason_ = std::move(why);
  cancelled_.store(true);
}

AbortCause RequestStream::cancel_cause() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancel_cause_;
}

std::string RequestStream::cancel_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancel_reason_;
}

}  // namespace tessera::engine
