#include "runtime/memory_stats.h"

#include <algorithm>

namespace tessera::runtime {

void MemoryAccounting::OnPluginAlloc(int32_t device, tsr_mem_kind kind,
                                     uint64_t reserved) {
  MutexLock lock(&mu_);
  MemoryStats& s = stats_[{device, kind}];
  s.reserved_bytes += reserved;
  s.reserved_peak = std::max(s.reserved_peak, s.reserved_bytes);
  ++s.plugin_allocations;
}

void MemoryAccounting::OnPluginFree(int32_t device, tsr_mem_kind kind,
                                    uint64_t reserved) {
  MutexLock lock(&mu_);
  MemoryStats& s = stats_[{device, kind}];
  s.reserved_bytes -= std::min(s.reserved_bytes, reserved);
  ++s.plugin_frees;
}

void MemoryAccounting::OnBufferCreated(int32_t device, tsr_mem_kind kind,
                                       uint64_t bytes) {
  MutexLock lock(&mu_);
  MemoryStats& s = stats_[{device, kind}];
  s.requested_bytes += bytes;
  s.requested_peak = std::max(s.requested_peak, s.requested_bytes);
  ++s.live_buffers;
}

void MemoryAccounting::OnBufferDestroyed(int32_t device, tsr_mem_kind kind,
                                         uint64_t bytes) {
  MutexLock lock(&mu_);
  MemoryStats& s = stats_[{device, kind}];
  s.requested_bytes -= std::min(s.requested_bytes, bytes);
  if (s.live_buffers > 0) --s.live_buffers;
}

MemoryStats MemoryAccounting::Get(int32_t device, tsr_mem_kind kind) const {
  MutexLock lock(&mu_);
  auto it = stats_.find({device, kind});
  return it == stats_.end() ? MemoryStats{} : it->second;
}

std::vector<MemoryStatsEntry> MemoryAccounting::All() const {
  MutexLock lock(&mu_);
  std::vector<MemoryStatsEntry> out;
  for (const auto& [key, stats] : stats_) {
    out.push_back({key.first, static_cast<tsr_mem_kind>(key.second), stats});
  }
  return out;
}

}  // namespace tessera::runtime
