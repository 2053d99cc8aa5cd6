// HostKvPool: the host tier of the KV cache (HiCache's L2) — whole KV pages
// of one model in host memory, where pages evicted from the device pool go
// instead of being dropped.
//
// Geometry: a host page holds what a device page holds, across every layer,
// K and V: page_size positions x kv_heads x head_dim in the device pool's
// dtype. A *segment* is one (layer, kv, head) part of a page: page_size *
// head_dim contiguous elements, the unit both layouts keep contiguous (the
// device slab is head-major, so a device page is also one contiguous run
// per head; see kv_pool.h). kv is 0 for K, 1 for V.
//
// Layouts (--hicache-mem-layout):
//   page_first   byte offset of segment (page, layer, kv, head) =
//                  page * page_bytes + ((layer * 2 + kv) * Hk + head) * seg
//                one page is one contiguous object (what the storage tier
//                writes and reads in one piece);
//   layer_first  ((layer * 2 + kv) * Hk + head) * num_pages * seg + page * seg
//                consecutive host pages of one (layer, kv, head) are
//                contiguous, so runs of consecutive pages move in one copy.
//
// Memory: pinned host memory from the device's plugin when it offers it
// (TSR_CAP_PINNED_HOST: the copy engines read and write it directly),
// otherwise page-aligned heap memory. Pages are handed out by a
// PageAllocator (all-or-nothing, ResourceExhausted when short).
//
// Ownership: owns its memory; must die before the Device. Thread-safety:
// the allocator is the scheduler thread's; the bytes of a page are written
// only by the transfer job that owns it at that moment (kv_transfer.h).
#ifndef TESSERA_KV_HOST_KV_POOL_H_
#define TESSERA_KV_HOST_KV_POOL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/kv_pool.h"
#include "kv/page_allocator.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

namespace tessera::kv {

enum class HostLayout { kPageFirst, kLayerFirst };
// "page_first" | "layer_first"; InvalidArgument naming both otherwise.
StatusOr<HostLayout> ParseHostLayout(std::string_view name);
const char* HostLayoutName(HostLayout layout);

class HostKvPool {
 public:
  // `num_pages` pages shaped like `device_pool`'s. InvalidArgument for
  // num_pages < 1; ResourceExhausted when the memory cannot be had (the
  // message gives the bytes and the flags that size it).
  static StatusOr<std::unique_ptr<HostKvPool>> Create(runtime::Device& device,
                                                      const KvPool& device_pool,
                                                      int64_t num_pages,
                                                      HostLayout layout);
  ~HostKvPool();
  HostKvPool(const HostKvPool&) = delete;
  HostKvPool& operator=(const HostKvPool&) = delete;

  HostLayout layout() const { return layout_; }
  int32_t page_size() const { return page_size_; }
  int64_t num_layers() const { return num_layers_; }
  int64_t num_kv_heads() const { return num_kv_heads_; }
  int64_t num_pages() const { return allocator_.num_pages(); }
  int64_t num_free_pages() const { return allocator_.num_free(); }
  int64_t num_used_pages() const { return allocator_.num_used(); }
  uint64_t page_bytes() const { return page_bytes_; }
  uint64_t segment_bytes() const { return segment_bytes_; }
  uint64_t total_bytes() const { return page_bytes_ * num_pages(); }
  bool pinned() const { return buffer_ != nullptr; }

  Status AllocatePages(int64_t count, std::vector<int32_t>& out) {
    return allocator_.Allocate(count, out);
  }
  Status FreePages(std::span<const int32_t> pages) {
    return allocator_.Free(pages);
  }
  bool IsAllocated(int32_t page) const { return allocator_.IsAllocated(page); }

  // Byte offset of segment (page, layer, kv, head) in data().
  uint64_t SegmentOffset(int32_t page, int64_t layer, int kv,
                         int64_t head) const;
  uint8_t* data() const { return data_; }

  // page_first only: the page's bytes as one object (storage tier).
  std::span<uint8_t> PageBytes(int32_t page) const;
  // Copies page `page`'s segments into / out of `object` (page_bytes()
  // bytes in page_first order), whatever the layout.
  void ReadPage(int32_t page, std::span<uint8_t> object) const;
  void WritePage(int32_t page, std::span<const uint8_t> object);

  Status CheckIntegrity() const { return allocator_.CheckIntegrity(); }

 private:
  HostKvPool(const KvPool& device_pool, int64_t num_pages, HostLayout layout);

  const HostLayout layout_;
  const int32_t page_size_;
  const int64_t num_layers_;
  const int64_t num_kv_heads_;
  const uint64_t segment_bytes_;  // page_size * head_dim * dtype size
  const uint64_t page_bytes_;     // 2 * layers * kv_heads * segment
  PageAllocator allocator_;
  runtime::BufferPtr buffer_;  // pinned memory, or null (heap)
  uint8_t* heap_ = nullptr;    // heap memory when not pinned
  uint8_t* data_ = nullptr;
};

}  // namespace tessera::kv

#endif  // TESSERA_KV_HOST_KV_POOL_H_
