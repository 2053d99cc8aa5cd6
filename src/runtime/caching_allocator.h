// CachingAllocator: a pool of one plugin's allocations for one (device,
// memory kind), so hot paths never call the plugin's allocator.
//
// Sizes are rounded up to size classes (256 B minimum; above that four
// classes per power of two, so at most 25% is wasted). A freed Buffer's
// block goes back to its class's bin and the next request of that class
// reuses it (a hit); a miss allocates a new block from the plugin. When the
// plugin is out of memory the pool frees every cached block and tries once
// more. Trim() returns all cached blocks to the plugin. With
// max_cached_bytes set, a freed block that would push the cache past it goes
// straight back to the plugin.
//
// Reuse is immediate: a block freed while queued work still uses it may be
// handed out again. That is safe when allocation and work share one stream
// (stream order), which is how the engine uses a pool; otherwise synchronise
// before destroying the Buffer.
//
// Thread-safety: Allocate, Trim, stats and Buffer destruction may run on
// any thread; the bins and counters are guarded by mu_, and plugin calls
// happen outside the lock. The allocator must outlive every Buffer
// it handed out (the destructor logs an error when some are still alive).
#ifndef TESSERA_RUNTIME_CACHING_ALLOCATOR_H_
#define TESSERA_RUNTIME_CACHING_ALLOCATOR_H_

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "runtime/buffer.h"
#include "runtime/plugin.h"

namespace tessera::runtime {

struct CachingAllocatorStats {
  uint64_t hits = 0;                // requests served from a bin
  uint64_t misses = 0;              // requests that called the plugin
  uint64_t plugin_allocations = 0;  // successful buffer_alloc calls
  uint64_t plugin_frees = 0;        // buffer_free calls (trim, cap, OOM)
  uint64_t cached_blocks = 0;       // blocks in bins now
  uint64_t cached_bytes = 0;        // their capacity
  uint64_t in_use_blocks = 0;       // blocks held by live Buffers
  uint64_t in_use_bytes = 0;        // their capacity
};

class CachingAllocator : public BufferReleaser {
 public:
  struct Options {
    uint64_t alignment = 0;  // 0: the device's alignment
    uint64_t max_cached_bytes = std::numeric_limits<uint64_t>::max();
  };

  CachingAllocator(Plugin& plugin, int32_t device, tsr_mem_kind kind);
  CachingAllocator(Plugin& plugin, int32_t device, tsr_mem_kind kind,
                   Options options);
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A Buffer of at least `size` bytes (size() == size) whose block comes
  // from a bin when one of its class is free.
  StatusOr<BufferPtr> Allocate(uint64_t size) TSR_EXCLUDES(mu_);
  // Frees every cached block back to the plugin.
  Status Trim() TSR_EXCLUDES(mu_);
  CachingAllocatorStats stats() const TSR_EXCLUDES(mu_);

  int32_t device() const { return device_; }
  tsr_mem_kind kind() const { return kind_; }

  // The block size used for a request of `size` bytes.
  static uint64_t SizeClass(uint64_t size);

  // Called by ~Buffer: puts the block back in its bin (or frees it).
  void Release(const RawAllocation& allocation) override TSR_EXCLUDES(mu_);

 private:
  // Takes every cached block out of the bins (to free outside the lock).
  std::vector<RawAllocation> TakeAllCachedLocked() TSR_REQUIRES(mu_);
  Status FreeBlocks(const std::vector<RawAllocation>& blocks) TSR_EXCLUDES(mu_);

  Plugin& plugin_;
  const int32_t device_;
  const tsr_mem_kind kind_;
  const Options options_;

  mutable Mutex mu_;
  // size class -> free blocks of exactly that size.
  std::map<uint64_t, std::vector<RawAllocation>> bins_ TSR_GUARDED_BY(mu_);
  CachingAllocatorStats stats_ TSR_GUARDED_BY(mu_);
};

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_CACHING_ALLOCATOR_H_
