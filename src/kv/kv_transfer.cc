#include "kv/kv_transfer.h"

#include <fmt/format.h>

#include <utility>

#include "base/monotonic_clock.h"

namespace tessera::kv {

StatusOr<std::unique_ptr<KvTransfer>> KvTransfer::Create(
    runtime::Device& device, const KvPool& device_pool, HostKvPool& host_pool) {
  if (host_pool.page_size() != device_pool.page_size() ||
      host_pool.num_layers() != device_pool.num_layers() ||
      host_pool.page_bytes() != KvPool::BytesPerPage(device_pool.options())) {
    return InvalidArgumentError(
        "the host KV pool is not shaped like the device pool");
  }
  std::unique_ptr<KvTransfer> transfer(new KvTransfer(device_pool, host_pool));
  for (auto& stream : transfer->streams_) {
    TSR_ASSIGN_OR_RETURN(stream, device.CreateStream());
  }
  KvTransfer* t = transfer.get();
  for (int d = 0; d < 2; ++d) {
    t->threads_[d] = std::thread([t, d] {
      t->Worker(static_cast<TransferDirection>(d), t->streams_[d].get());
    });
  }
  return transfer;
}

KvTransfer::~KvTransfer() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
}

uint64_t KvTransfer::Submit(TransferDirection direction,
                            std::vector<PageCopy> pages) {
  uint64_t id = 0;
  {
    MutexLock lock(&mu_);
    Lane& lane = lanes_[static_cast<int>(direction)];
    id = lane.next_id++;
    lane.queue.push_back(Job{id, std::move(pages), MonotonicNs()});
  }
  cv_.SignalAll();
  return id;
}

std::vector<TransferDone> KvTransfer::PollDone() {
  MutexLock lock(&mu_);
  std::vector<TransferDone> done;
  done.swap(done_);
  return done;
}

void KvTransfer::WaitIdle(TransferDirection direction) {
  MutexLock lock(&mu_);
  Lane& lane = lanes_[static_cast<int>(direction)];
  const uint64_t target = lane.next_id - 1;
  while (lane.finished_id < target) cv_.Wait(&mu_);
}

int64_t KvTransfer::Pending(TransferDirection direction) const {
  MutexLock lock(&mu_);
  const Lane& lane = lanes_[static_cast<int>(direction)];
  return static_cast<int64_t>(lane.next_id - 1 - lane.finished_id);
}

TransferTotals KvTransfer::Totals(TransferDirection direction) const {
  MutexLock lock(&mu_);
  return lanes_[static_cast<int>(direction)].totals;
}

void KvTransfer::Worker(TransferDirection direction, runtime::Stream* stream) {
  const int d = static_cast<int>(direction);
  while (true) {
    Job job;
    {
      MutexLock lock(&mu_);
      // Queued jobs run even after stop_: their pages are promised.
      while (lanes_[d].queue.empty() && !stop_) cv_.Wait(&mu_);
      if (lanes_[d].queue.empty()) return;
      job = std::move(lanes_[d].queue.front());
      lanes_[d].queue.pop_front();
    }
    Status status = Copy(direction, *stream, job.pages);
    const uint64_t bytes = job.pages.size() * host_pool_.page_bytes();
    const double seconds = static_cast<double>(MonotonicNs() - job.submitted_ns) * 1e-9;
    {
      MutexLock lock(&mu_);
      Lane& lane = lanes_[d];
      lane.finished_id = job.id;
      lane.totals.jobs += 1;
      lane.totals.pages += job.pages.size();
      if (status.ok()) lane.totals.bytes += bytes;
      lane.totals.seconds += seconds;
      done_.push_back(
          TransferDone{direction, job.id, std::move(status), bytes, seconds});
    }
    cv_.SignalAll();
  }
}

Status KvTransfer::Copy(TransferDirection direction, runtime::Stream& stream,
                        const std::vector<PageCopy>& pages) const {
  const uint64_t seg = host_pool_.segment_bytes();
  const uint64_t head_stride =  // bytes between heads in a device slab
      static_cast<uint64_t>(device_pool_.slab_slots()) /
      static_cast<uint64_t>(device_pool_.page_size()) * seg;
  const bool host_runs = host_pool_.layout() == HostLayout::kLayerFirst;
  size_t i = 0;
  while (i < pages.size()) {
    // A run of pages consecutive on the device (and, layer_first, on the
    // host) moves in one copy per segment.
    size_t n = 1;
    while (i + n < pages.size() &&
           pages[i + n].device_page == pages[i].device_page + static_cast<int32_t>(n) &&
           (!host_runs ||
            pages[i + n].host_page == pages[i].host_page + static_cast<int32_t>(n))) {
      ++n;
    }
    const size_t host_run = host_runs ? n : 1;
    for (int64_t layer = 0; layer < device_pool_.num_layers(); ++layer) {
      for (int kv = 0; kv < 2; ++kv) {
        runtime::Buffer& slab = kv == 0 ? device_pool_.k_buffer(layer)
                                        : device_pool_.v_buffer(layer);
        for (int64_t head = 0; head < host_pool_.num_kv_heads(); ++head) {
          for (size_t j = 0; j < n; j += host_run) {
            const PageCopy& p = pages[i + j];
            const uint64_t dev_off =
                static_cast<uint64_t>(head) * head_stride +
                static_cast<uint64_t>(p.device_page) * seg;
            uint8_t* host = host_pool_.data() +
                            host_pool_.SegmentOffset(p.host_page, layer, kv, head);
            const uint64_t bytes = host_run * seg;
            Status s = direction == TransferDirection::kBackup
                           ? stream.CopyDeviceToHost(host, slab, dev_off, bytes)
                           : stream.CopyHostToDevice(slab, dev_off, host, bytes);
            if (!s.ok()) {
              (void)stream.Synchronize();
              return s.WithContext(fmt::format(
                  "KV {} of device page {} / host page {}",
                  direction == TransferDirection::kBackup ? "backup" : "load",
                  p.device_page, p.host_page));
            }
          }
        }
      }
    }
    i += n;
  }
  return stream.Synchronize();
}

}  // namespace tessera::kv
