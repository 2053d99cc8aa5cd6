// Buffers of the cpu plugin: aligned host memory, for both TSR_MEM_DEVICE
// and TSR_MEM_PINNED_HOST (on a CPU they are the same thing), plus the
// byte-level copy and fill routines the copy entries run.
//
// Allocation never touches the pages, so an impossible size fails cleanly
// with TSR_ERR_OUT_OF_MEMORY instead of being killed later. A Buffer owns
// its memory and frees it on destruction. Immutable after creation, so
// thread-safe; the bytes themselves are the host's to order via streams.
#ifndef TESSERA_PLUGINS_CPU_MEMORY_H_
#define TESSERA_PLUGINS_CPU_MEMORY_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "kit_names.h"

namespace tessera::cpu {

// Every buffer is aligned to at least this many bytes (a cache line).
constexpr uint64_t kMinAlignment = 64;

// Bytes one device holds in live buffers, and the most it has held (ABI 1.7
// memory_stats). Lock-free: allocations and frees happen on any thread.
class MemoryCounter {
 public:
  void Add(uint64_t bytes);
  void Sub(uint64_t bytes) { in_use_.fetch_sub(bytes, std::memory_order_relaxed); }
  uint64_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> in_use_{0};
  std::atomic<uint64_t> peak_{0};
};

struct Buffer {
  Buffer() = default;
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  int device = 0;
  tsr_mem_kind kind = TSR_MEM_DEVICE;
  uint64_t size = 0;           // bytes requested
  uint64_t reserved_size = 0;  // bytes allocated (size rounded up)
  uint64_t alignment = 0;      // effective alignment
  char* data = nullptr;        // never null
  // The device's counter: reserved_size is added by Track and taken off when
  // the buffer goes (queued work may hold a buffer past shutdown, hence
  // shared).
  std::shared_ptr<MemoryCounter> counter;

  void Track(std::shared_ptr<MemoryCounter> device_counter);
};

// Allocates `size` bytes aligned to max(alignment, kMinAlignment).
// `memory_limit` (total system memory, 0 = unknown) rejects sizes that can
// never fit. With `huge_pages` (the plugin option, default off), buffers
// of 2 MiB and more start on a 2 MiB boundary and ask for transparent huge
// pages (MADV_HUGEPAGE), else they refuse them (MADV_NOHUGEPAGE, which also
// holds where THP is "always"). Decode streams every weight once per step,
// but fewer TLB misses did not show in it (qwen3-0.6b on an Intel Xeon VM,
// A B: Q4_0 batch 1 40.5-43.7 tok/s with huge pages, 41.5-43.3 without;
// bf16 19.7-21.1 and 19.9-20.6), while the first touch did: on a VM that
// hands freed memory back to its host, 1.1 GB of fresh huge pages took
// 1.1-2.0 s to fault in after another process exited, 4 KiB pages 0.2 s.
Status AllocateBuffer(int device, tsr_mem_kind kind, uint64_t size,
                      uint64_t alignment, uint64_t memory_limit, bool huge_pages,
                      std::unique_ptr<Buffer>* out);

// memcpy(to, from, size) where `to` lies in a Buffer. Copies of at least
// kParallelCopyBytes are split into up to `threads` parts on 2 MiB
// boundaries, run at once (the caller takes the first), and each part's
// whole destination pages are first made present in one kernel call
// (MADV_POPULATE_WRITE, Linux 5.14+; where refused the copy faults them
// page by page as before). A fresh buffer's first write is where loading a
// model spends its time: on a 2-vCPU VM, touching 1.1 GB of fresh huge
// pages page by page took 0.5-2.7 s from one thread, populate and copy on
// two 0.13-0.16 s. Thread-safe; the ranges must not overlap.
inline constexpr uint64_t kParallelCopyBytes = uint64_t{4} << 20;
void CopyToBuffer(char* to, const void* from, uint64_t size, int threads);

// memset(to, value, size) where `to` lies in a Buffer. Zero fills of at
// least kParallelCopyBytes hand the whole pages inside the range back to
// the kernel instead (MADV_DONTNEED: a buffer's memory is private and
// anonymous, so they read as zeros and are faulted in again when first
// written); the partial pages at the ends, other values and smaller fills
// are a plain memset. A KV pool's start-up zero fill (6 GB for qwen3-0.6b's
// default pool) was 75% of `serve`'s start-up, page faults included.
// Thread-safe; the host orders it against other use of the range.
void FillBuffer(char* to, uint8_t value, uint64_t size);

// Checks that [offset, offset + size) lies inside `buffer`.
Status CheckRange(const Buffer& buffer, uint64_t offset, uint64_t size,
                  const char* what);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_MEMORY_H_
