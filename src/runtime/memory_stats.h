// MemoryAccounting: per (device, memory kind) byte counters of one plugin.
//
// Two quantities are kept apart, current and peak:
//   requested: bytes callers asked for in live Buffers (what the engine uses);
//   reserved:  bytes the plugin reserved for live allocations (what the chip
//              gives up), including blocks a CachingAllocator keeps cached.
// reserved >= requested always holds for a device whose buffers all come
// through Plugin::Allocate. Thread-safe: every method takes the internal
// mutex; counters are plain integers under it.
#ifndef TESSERA_RUNTIME_MEMORY_STATS_H_
#define TESSERA_RUNTIME_MEMORY_STATS_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::runtime {

struct MemoryStats {
  uint64_t requested_bytes = 0;  // live bytes in Buffers handed to callers
  uint64_t requested_peak = 0;
  uint64_t reserved_bytes = 0;  // live bytes the plugin reserved
  uint64_t reserved_peak = 0;
  uint64_t live_buffers = 0;        // Buffers handed out and not destroyed
  uint64_t plugin_allocations = 0;  // buffer_alloc calls that succeeded
  uint64_t plugin_frees = 0;        // buffer_free calls
};

struct MemoryStatsEntry {
  int32_t device = 0;
  tsr_mem_kind kind = TSR_MEM_DEVICE;
  MemoryStats stats;
};

class MemoryAccounting {
 public:
  // A plugin allocation of `reserved` bytes was made / freed.
  void OnPluginAlloc(int32_t device, tsr_mem_kind kind, uint64_t reserved)
      TSR_EXCLUDES(mu_);
  void OnPluginFree(int32_t device, tsr_mem_kind kind, uint64_t reserved)
      TSR_EXCLUDES(mu_);
  // A Buffer of `bytes` was handed to a caller / destroyed.
  void OnBufferCreated(int32_t device, tsr_mem_kind kind, uint64_t bytes)
      TSR_EXCLUDES(mu_);
  void OnBufferDestroyed(int32_t device, tsr_mem_kind kind, uint64_t bytes)
      TSR_EXCLUDES(mu_);

  MemoryStats Get(int32_t device, tsr_mem_kind kind) const TSR_EXCLUDES(mu_);
  // Every (device, kind) seen so far, ordered by device then kind.
  std::vector<MemoryStatsEntry> All() const TSR_EXCLUDES(mu_);

 private:
  using Key = std::pair<int32_t, int32_t>;

  mutable Mutex mu_;
  std::map<Key, MemoryStats> stats_ TSR_GUARDED_BY(mu_);
};

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_MEMORY_STATS_H_
