#include "memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <unistd.h>

namespace tessera::cpu {
namespace {

constexpr uint64_t kHugePageBytes = 2u << 20;

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL
#endif

// The whole pages inside [to, to + size): [*begin, *end), empty when
// *end <= *begin.
void WholePages(const char* to, uint64_t size, char** begin, char** end) {
  static const uint64_t kPage = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = reinterpret_cast<uint64_t>(to);
  *begin = reinterpret_cast<char*>((start + kPage - 1) / kPage * kPage);
  *end = reinterpret_cast<char*>((start + size) / kPage * kPage);
}

// Faults in the whole pages inside [to, to + size) for writing, one call.
void PopulateForWrite(char* to, uint64_t size) {
  char *begin, *end;
  WholePages(to, size, &begin, &end);
  if (end > begin) {
    madvise(begin, static_cast<size_t>(end - begin), MADV_POPULATE_WRITE);  // advice only
  }
}

void PopulateAndCopy(char* to, const char* from, uint64_t size) {
  PopulateForWrite(to, size);
  std::memcpy(to, from, size);
}

}  // namespace

void MemoryCounter::Add(uint64_t bytes) {
  const uint64_t now = in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  uint64_t peak = peak_.load(std::memory_order_relaxed);
  while (now > peak && !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

Buffer::~Buffer() {
  std::free(data);
  if (counter != nullptr) counter->Sub(reserved_size);
}

void Buffer::Track(std::shared_ptr<MemoryCounter> device_counter) {
  counter = std::move(device_counter);
  counter->Add(reserved_size);
}

Status AllocateBuffer(int device, tsr_mem_kind kind, uint64_t size,
                      uint64_t alignment, uint64_t memory_limit, bool huge_pages,
                      std::unique_ptr<Buffer>* out) {
  if (kind != TSR_MEM_DEVICE && kind != TSR_MEM_PINNED_HOST) {
    return InvalidArgument("memory kind ", kind,
                           " is not one of TSR_MEM_DEVICE (0) or "
                           "TSR_MEM_PINNED_HOST (1)");
  }
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) {
    return InvalidArgument("alignment ", alignment,
                           " is not a power of two; pass 0 for the default "
                           "or a power of two");
  }
  uint64_t align = alignment > kMinAlignment ? alignment : kMinAlignment;
  if (align > (uint64_t{1} << 40)) {
    return OutOfMemory("alignment ", alignment, " bytes is larger than any "
                       "allocation this machine can make");
  }
  if (size > UINT64_MAX - align) {
    return OutOfMemory("cannot allocate ", size, " bytes: the size overflows");
  }
  uint64_t reserved = size == 0 ? align : (size + align - 1) / align * align;
  if (memory_limit != 0 && reserved > memory_limit) {
    return OutOfMemory("cannot allocate ", size, " bytes: this machine has ",
                       memory_limit,
                       " bytes of memory in all; use a smaller size (a "
                       "smaller model, batch or KV pool)");
  }
  if (reserved > static_cast<uint64_t>(SIZE_MAX)) {
    return OutOfMemory("cannot allocate ", size, " bytes: larger than the address space");
  }
  // With huge_pages, large buffers (weights, KV slabs) start on a 2 MiB
  // boundary and ask for transparent huge pages (memory.h says when that
  // pays).
  const bool huge = huge_pages && reserved >= kHugePageBytes;
  const uint64_t placed = huge ? std::max<uint64_t>(align, kHugePageBytes) : align;
  void* data = nullptr;
  int rc = posix_memalign(&data, static_cast<size_t>(placed), static_cast<size_t>(reserved));
  if (rc == 0 && data != nullptr && reserved >= kHugePageBytes) {
    // Advice only; NOHUGEPAGE keeps huge_pages=0 true where THP is "always".
    madvise(data, static_cast<size_t>(reserved), huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  }
  if (rc != 0 || data == nullptr) {
    return OutOfMemory("cannot allocate ", size, " bytes (aligned to ", align,
                       "): the system refused (", rc == ENOMEM ? "out of memory" : "error ",
                       rc == ENOMEM ? "" : std::to_string(rc),
                       "); free buffers or use a smaller size");
  }
  auto buffer = std::make_unique<Buffer>();
  buffer->device = device;
  buffer->kind = kind;
  buffer->size = size;
  buffer->reserved_size = reserved;
  buffer->alignment = align;
  buffer->data = static_cast<char*>(data);
  *out = std::move(buffer);
  return OkStatus();
}

void CopyToBuffer(char* to, const void* from, uint64_t size, int threads) {
  const char* src = static_cast<const char*>(from);
  if (size < kParallelCopyBytes || threads <= 1) {
    if (size >= kParallelCopyBytes) PopulateForWrite(to, size);
    std::memcpy(to, src, size);
    return;
  }
  // Equal parts, each cut moved to the nearest 2 MiB boundary of the
  // destination, so no huge page is faulted by two threads.
  const uint64_t parts = std::min<uint64_t>(static_cast<uint64_t>(threads),
                                            size / kHugePageBytes);
  const uint64_t base = reinterpret_cast<uint64_t>(to);
  std::vector<uint64_t> cuts{0};
  for (uint64_t i = 1; i < parts; ++i) {
    const uint64_t even = base + size / parts * i;
    const uint64_t cut = (even + kHugePageBytes / 2) / kHugePageBytes * kHugePageBytes - base;
    if (cut > cuts.back() && cut < size) cuts.push_back(cut);
  }
  cuts.push_back(size);
  std::vector<std::thread> helpers;
  for (size_t i = 1; i + 1 < cuts.size(); ++i) {
    helpers.emplace_back(PopulateAndCopy, to + cuts[i], src + cuts[i], cuts[i + 1] - cuts[i]);
  }
  PopulateAndCopy(to, src, cuts[1]);
  for (std::thread& helper : helpers) helper.join();
}

void FillBuffer(char* to, uint8_t value, uint64_t size) {
  if (value != 0 || size < kParallelCopyBytes) {
    std::memset(to, value, size);
    return;
  }
  char *begin, *end;
  WholePages(to, size, &begin, &end);  // non-empty: size >= kParallelCopyBytes
  if (madvise(begin, static_cast<size_t>(end - begin), MADV_DONTNEED) != 0) {
    std::memset(to, 0, size);
    return;
  }
  std::memset(to, 0, static_cast<size_t>(begin - to));
  std::memset(end, 0, static_cast<size_t>(to + size - end));
}

Status CheckRange(const Buffer& buffer, uint64_t offset, uint64_t size,
                  const char* what) {
  if (offset > buffer.size || size > buffer.size - offset) {
    return InvalidArgument(what, " range [", offset, ", ", offset, " + ", size,
                           ") exceeds the buffer's ", buffer.size,
                           " bytes; check the offset and size");
  }
  return OkStatus();
}

}  // namespace tessera::cpu
