#include "kv/storage_worker.h"

#include <chrono>
#include <utility>

#include "base/logging.h"
#include "base/monotonic_clock.h"

namespace tessera::kv {

StorageWorker::StorageWorker(std::unique_ptr<KvStorage> backend,
                             uint64_t identity, int32_t page_size,
                             uint64_t payload_bytes)
    : backend_(std::move(backend)),
      identity_(identity),
      page_size_(page_size),
      payload_bytes_(payload_bytes) {
  thread_ = std::thread([this] { Run(); });
}

StorageWorker::~StorageWorker() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void StorageWorker::Write(std::vector<PageKey> keys,
                          std::vector<std::vector<uint8_t>> payloads) {
  Job job;
  job.kind = Job::kWrite;
  for (const auto& p : payloads) job.bytes += p.size();
  {
    MutexLock lock(&mu_);
    if (queued_write_bytes_ + job.bytes > kMaxQueuedWriteBytes) {
      totals_.dropped_writes += static_cast<int64_t>(keys.size());
      return;
    }
    queued_write_bytes_ += job.bytes;
    job.keys = std::move(keys);
    job.payloads = std::move(payloads);
    queue_.push_back(std::move(job));
  }
  cv_.SignalAll();
}

uint64_t StorageWorker::Prefetch(std::vector<PageKey> keys) {
  uint64_t id = 0;
  {
    MutexLock lock(&mu_);
    id = next_id_++;
    Job job;
    job.kind = Job::kPrefetch;
    job.id = id;
    job.keys = std::move(keys);
    job.submitted_ns = MonotonicNs();
    queue_.push_back(std::move(job));
  }
  cv_.SignalAll();
  return id;
}

std::vector<PrefetchResult> StorageWorker::PollPrefetched() {
  MutexLock lock(&mu_);
  std::vector<PrefetchResult> out;
  out.swap(done_);
  return out;
}

Status StorageWorker::Clear() {
  MutexLock lock(&mu_);
  Job job;
  job.kind = Job::kClear;
  queue_.push_back(std::move(job));
  const uint64_t target = clears_done_ + 1;
  cv_.SignalAll();
  while (clears_done_ < target && !stop_) cv_.Wait(&mu_);
  return clear_status_;
}

void StorageWorker::WaitIdle() {
  MutexLock lock(&mu_);
  while ((!queue_.empty() || busy_) && !stop_) cv_.Wait(&mu_);
}

bool StorageWorker::WaitIdleFor(double seconds) {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(seconds));
  MutexLock lock(&mu_);
  while ((!queue_.empty() || busy_) && !stop_) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    cv_.WaitFor(&mu_, deadline - now);
  }
  return true;
}

StorageTotals StorageWorker::Totals() const {
  MutexLock lock(&mu_);
  return totals_;
}

void StorageWorker::Failed(const Status& status) {
  MutexLock lock(&mu_);
  ++totals_.failures;
  const uint64_t now = MonotonicNs();
  if (last_warning_ns_ == 0 || now - last_warning_ns_ > 10'000'000'000ull) {
    last_warning_ns_ = now;
    TSR_LOG_WARN("KV storage tier ({}): {}; prefixes are recomputed "
                 "meanwhile",
                 backend_->name(), status.ToString());
  }
}

void StorageWorker::DoWrite(Job& job) {
  int64_t written = 0;
  uint64_t bytes = 0;
  for (size_t i = 0; i < job.keys.size(); ++i) {
    std::vector<uint8_t> object =
        EncodePageObject(identity_, job.keys[i], page_size_, job.payloads[i]);
    Status s = backend_->Put(job.keys[i], object);
    if (!s.ok()) {
      Failed(s);
      break;  // later pages of a prefix are useless without this one
    }
    ++written;
    bytes += object.size();
  }
  MutexLock lock(&mu_);
  totals_.pages_written += written;
  totals_.bytes_written += bytes;
}

PrefetchResult StorageWorker::DoPrefetch(const Job& job) {
  PrefetchResult r;
  r.id = job.id;
  StatusOr<size_t> present = backend_->CountPresent(job.keys);
  if (!present.ok()) {
    Failed(present.status());
    return r;
  }
  uint64_t bytes = 0;
  int64_t corrupt = 0;
  for (size_t i = 0; i < *present; ++i) {
    StatusOr<std::vector<uint8_t>> object = backend_->Get(job.keys[i]);
    if (!object.ok()) {
      if (object.status().code() != StatusCode::kNotFound) {
        Failed(object.status());
      }
      break;
    }
    auto payload =
        DecodePageObject(*object, identity_, job.keys[i], payload_bytes_);
    if (!payload.ok()) {
      ++corrupt;
      TSR_LOG_WARN("KV storage tier ({}): page {} refused: {}; recomputing it",
                   backend_->name(), job.keys[i].Hex(),
                   payload.status().message());
      break;
    }
    bytes += object->size();
    r.payloads.emplace_back(payload->begin(), payload->end());
  }
  MutexLock lock(&mu_);
  totals_.pages_read += static_cast<int64_t>(r.payloads.size());
  totals_.bytes_read += bytes;
  totals_.corrupt_pages += corrupt;
  return r;
}

void StorageWorker::Run() {
  while (true) {
    Job job;
    {
      MutexLock lock(&mu_);
      busy_ = false;
      cv_.SignalAll();
      while (queue_.empty() && !stop_) cv_.Wait(&mu_);
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      if (job.kind == Job::kWrite) queued_write_bytes_ -= job.bytes;
    }
    switch (job.kind) {
      case Job::kWrite:
        DoWrite(job);
        break;
      case Job::kPrefetch: {
        PrefetchResult r = DoPrefetch(job);
        r.seconds = static_cast<double>(MonotonicNs() - job.submitted_ns) * 1e-9;
        MutexLock lock(&mu_);
        totals_.read_seconds += r.seconds;
        done_.push_back(std::move(r));
        break;
      }
      case Job::kClear: {
        Status s = backend_->Clear();
        MutexLock lock(&mu_);
        clear_status_ = s;
        ++clears_done_;
        break;
      }
    }
  }
}

}  // namespace tessera::kv
