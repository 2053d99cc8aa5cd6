// KvPool: the paged KV cache of one model on one device.
//
// Per layer the pool holds a K slab and a V slab on the device, each a
// tensor (slab_slots, kv_heads, head_dim) in `dtype` stored head-major
// (slab_slots = num_slots plus one scratch page, see scratch_page()):
// element (slot, head, i) at (head * num_slots + slot) * head_dim + i, so
// one KV head's rows of a page are contiguous (attention streams a head's
// keys; slot-major rows of one head sit kv_heads * head_dim apart, a
// stride the CPU's prefetchers do not follow). num_slots = num_pages *
// page_size (the allocatable slots). A page is page_size consecutive slots; token position p of a
// sequence whose page list (block table) is `pages` lives at slot
// pages[p / page_size] * page_size + p % page_size. The kv_store and
// paged_attention ops address exactly that (tessera_plugin.h; any strides),
// so KCache/VCache hand the slabs to them as strided views.
//
// Sizing: by a token capacity (rounded up to whole pages) or by a memory
// budget in bytes (as many pages as fit; a page costs
// 2 * layers * page_size * kv_heads * head_dim * dtype size bytes).
// Pages are handed out by a PageAllocator (O(1) per page, all-or-nothing
// requests, ResourceExhausted naming the pages asked for and free).
//
// Ownership: the pool owns its slabs (uncached device buffers) and must die
// before the Device. Thread-safety: not thread-safe; the scheduler thread
// owns the pool. The slabs themselves are written only by ops on streams.
#ifndef TESSERA_KV_KV_POOL_H_
#define TESSERA_KV_KV_POOL_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/dtype.h"
#include "base/status.h"
#include "kv/page_allocator.h"
#include "runtime/buffer.h"
#include "runtime/device.h"

namespace tessera::kv {

struct KvPoolOptions {
  int64_t num_layers = 0;    // L
  int64_t num_kv_heads = 0;  // Hk
  int64_t head_dim = 0;      // D
  DType dtype = TSR_DTYPE_F32;
  int32_t page_size = 16;  // slots per page, >= 1
  // Exactly one of these is positive.
  int64_t capacity_tokens = 0;       // rounded up to whole pages
  uint64_t memory_budget_bytes = 0;  // floor(budget / bytes per page) pages
  // Zero the slabs at creation (deterministic contents for unused slots).
  bool zero_fill = true;
};

class KvPool {
 public:
  // Bytes one page costs across all layers, K and V.
  static uint64_t BytesPerPage(const KvPoolOptions& options);
  // Pages needed to hold `num_tokens` positions.
  static int64_t PagesForTokens(int64_t num_tokens, int32_t page_size) {
    return num_tokens <= 0 ? 0 : (num_tokens + page_size - 1) / page_size;
  }

  // Validates `options` and allocates the slabs on `device`.
  // InvalidArgument for bad sizes; ResourceExhausted when the device cannot
  // hold the slabs (the message gives the bytes asked for).
  static StatusOr<std::unique_ptr<KvPool>> Create(runtime::Device& device,
                                                  const KvPoolOptions& options);

  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  const KvPoolOptions& options() const { return options_; }
  DType dtype() const { return options_.dtype; }
  int32_t page_size() const { return options_.page_size; }
  int64_t num_layers() const { return options_.num_layers; }
  int64_t num_pages() const { return allocator_.num_pages(); }
  int64_t num_slots() const { return num_pages() * page_size(); }
  // A page the allocator never hands out (index num_pages()): steps padded
  // to a graph's batch size write their padding rows' K/V there. No real
  // sequence reads it. The slabs hold num_pages() + 1 pages.
  int32_t scratch_page() const { return static_cast<int32_t>(num_pages()); }
  int64_t slab_slots() const { return (num_pages() + 1) * page_size(); }
  int64_t num_free_pages() const { return allocator_.num_free(); }
  int64_t num_used_pages() const { return allocator_.num_used(); }
  // Bytes of all slabs together.
  uint64_t total_bytes() const;

  // Page allocation (see PageAllocator).
  StatusOr<int32_t> AllocatePage() { return allocator_.Allocate(); }
  Status AllocatePages(int64_t count, std::vector<int32_t>& out) {
    return allocator_.Allocate(count, out);
  }
  Status FreePages(std::span<const int32_t> pages) {
    return allocator_.Free(pages);
  }
  bool IsAllocated(int32_t page) const { return allocator_.IsAllocated(page); }

  // Grows the page list `pages` of one sequence until it covers `num_tokens`
  // positions (never shrinks it). All-or-nothing: on ResourceExhausted
  // `pages` is unchanged.
  Status EnsureCapacity(std::vector<int32_t>& pages, int64_t num_tokens);
  // Frees every page of `pages` and clears it.
  Status Release(std::vector<int32_t>& pages);

  // The slot of position `pos` of a sequence with page list `pages`
  // (pos < pages.size() * page_size).
  int32_t SlotOf(std::span<const int32_t> pages, int64_t pos) const {
    return pages[pos / page_size()] * page_size() +
           static_cast<int32_t>(pos % page_size());
  }

  // The slabs of `layer`: (slab_slots, kv_heads, head_dim) views.
  tsr_tensor KCache(int64_t layer) const;
  tsr_tensor VCache(int64_t layer) const;
  runtime::Buffer& k_buffer(int64_t layer) const { return *k_slabs_[layer]; }
  runtime::Buffer& v_buffer(int64_t layer) const { return *v_slabs_[layer]; }

  // Checks the allocator's invariants and the slab shapes.
  Status CheckIntegrity() const;

 private:
  KvPool(const KvPoolOptions& options, int64_t num_pages)
      : options_(options), allocator_(num_pages) {}
  tsr_tensor SlabView(const runtime::Buffer& buffer) const;

  const KvPoolOptions options_;
  PageAllocator allocator_;
  std::vector<runtime::BufferPtr> k_slabs_;  // per layer (S, Hk, D)
  std::vector<runtime::BufferPtr> v_slabs_;  // per layer (S, Hk, D)
};

}  // namespace tessera::kv

#endif  // TESSERA_KV_KV_POOL_H_
