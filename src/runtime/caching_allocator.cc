#include "runtime/caching_allocator.h"

#include <fmt/format.h>

#include <bit>

#include "base/logging.h"

namespace tessera::runtime {
namespace {

constexpr uint64_t kMinBlock = 256;

}  // namespace

uint64_t CachingAllocator::SizeClass(uint64_t size) {
  if (size <= kMinBlock) return kMinBlock;
  // 2^(k-1) < size <= 2^k; classes step by 2^(k-3) within that octave.
  int k = std::bit_width(size - 1);
  uint64_t step = uint64_t{1} << (k - 3);
  return (size + step - 1) / step * step;
}

CachingAllocator::CachingAllocator(Plugin& plugin, int32_t device,
                                   tsr_mem_kind kind)
    : CachingAllocator(plugin, device, kind, Options()) {}

CachingAllocator::CachingAllocator(Plugin& plugin, int32_t device,
                                   tsr_mem_kind kind, Options options)
    : plugin_(plugin), device_(device), kind_(kind), options_(options) {}

CachingAllocator::~CachingAllocator() {
  uint64_t in_use = 0;
  {
    MutexLock lock(&mu_);
    in_use = stats_.in_use_blocks;
  }
  if (in_use > 0) {
    TSR_LOG_ERROR(
        "{} device {}: the caching allocator is destroyed while {} of its "
        "buffers are alive; this is a bug (destroy buffers first)",
        plugin_.name(), device_, in_use);
  }
  Status s = Trim();
  if (!s.ok()) TSR_LOG_ERROR("{}", s.message());
}

StatusOr<BufferPtr> CachingAllocator::Allocate(uint64_t size) {
  const uint64_t block = SizeClass(size);
  {
    MutexLock lock(&mu_);
    auto it = bins_.find(block);
    if (it != bins_.end() && !it->second.empty()) {
      RawAllocation a = it->second.back();
      it->second.pop_back();
      ++stats_.hits;
      --stats_.cached_blocks;
      stats_.cached_bytes -= a.size;
      ++stats_.in_use_blocks;
      stats_.in_use_bytes += a.size;
      return std::make_unique<Buffer>(&plugin_, a, size, this);
    }
    ++stats_.misses;
  }
  auto allocation = plugin_.Allocate(device_, kind_, block, options_.alignment);
  if (!allocation.ok() &&
      allocation.status().code() == StatusCode::kResourceExhausted) {
    // Out of memory: give the cache back and try once more.
    TSR_RETURN_IF_ERROR(Trim());
    allocation = plugin_.Allocate(device_, kind_, block, options_.alignment);
  }
  if (!allocation.ok()) return allocation.status();
  MutexLock lock(&mu_);
  ++stats_.plugin_allocations;
  ++stats_.in_use_blocks;
  stats_.in_use_bytes += allocation->size;
  return std::make_unique<Buffer>(&plugin_, *allocation, size, this);
}

void CachingAllocator::Release(const RawAllocation& allocation) {
  {
    MutexLock lock(&mu_);
    --stats_.in_use_blocks;
    stats_.in_use_bytes -= allocation.size;
    if (stats_.cached_bytes + allocation.size <= options_.max_cached_bytes) {
      bins_[allocation.size].push_back(allocation);
      ++stats_.cached_blocks;
      stats_.cached_bytes += allocation.size;
      return;
    }
  }
  Status s = FreeBlocks({allocation});
  if (!s.ok()) TSR_LOG_ERROR("{}", s.message());
}

std::vector<RawAllocation> CachingAllocator::TakeAllCachedLocked() {
  std::vector<RawAllocation> blocks;
  for (auto& [size, bin] : bins_) {
    blocks.insert(blocks.end(), bin.begin(), bin.end());
  }
  bins_.clear();
  stats_.cached_blocks = 0;
  stats_.cached_bytes = 0;
  return blocks;
}

Status CachingAllocator::FreeBlocks(const std::vector<RawAllocation>& blocks) {
  Status first;
  for (const RawAllocation& a : blocks) {
    Status s = plugin_.Free(a);
    if (!s.ok() && first.ok()) first = s;
  }
  MutexLock lock(&mu_);
  stats_.plugin_frees += blocks.size();
  return first;
}

Status CachingAllocator::Trim() {
  std::vector<RawAllocation> blocks;
  {
    MutexLock lock(&mu_);
    blocks = TakeAllCachedLocked();
  }
  return FreeBlocks(blocks);
}

CachingAllocatorStats CachingAllocator::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

}  // namespace tessera::runtime
