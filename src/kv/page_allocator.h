// PageAllocator: hands out the page ids of a paged KV pool.
//
// Pages are numbered 0..num_pages-1. Free pages sit on a LIFO free list, so
// Allocate and Free are O(1) per page; a per-page flag makes a double free
// or a free of a page never handed out a detected error instead of silent
// corruption. Allocate(n) is all-or-nothing: when fewer than n pages are
// free nothing is taken and the error (ResourceExhausted) says how many
// pages were asked for and how many are free.
//
// Invariants (CheckIntegrity verifies them): every page is either on the
// free list exactly once or marked allocated, never both;
// num_free() + num_used() == num_pages().
//
// Thread-safety: not thread-safe; the owner (the scheduler thread)
// serialises calls.
#ifndef TESSERA_KV_PAGE_ALLOCATOR_H_
#define TESSERA_KV_PAGE_ALLOCATOR_H_

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace tessera::kv {

class PageAllocator {
 public:
  // All `num_pages` pages start free; Allocate returns low ids first.
  explicit PageAllocator(int64_t num_pages);

  int64_t num_pages() const { return static_cast<int64_t>(allocated_.size()); }
  int64_t num_free() const { return static_cast<int64_t>(free_list_.size()); }
  int64_t num_used() const { return num_pages() - num_free(); }
  bool IsAllocated(int32_t page) const;

  // One page, or ResourceExhausted.
  StatusOr<int32_t> Allocate();
  // Appends `count` pages to `out`, or leaves `out` untouched and returns
  // ResourceExhausted when fewer are free.
  Status Allocate(int64_t count, std::vector<int32_t>& out);

  // Returns pages to the free list. A page id out of range or not currently
  // allocated is an InvalidArgument error. The span form frees last to
  // first, so the next Allocate of as many pages returns them in the order
  // given; on a bad id the pages after it in `pages` are freed, the rest
  // are not.
  Status Free(int32_t page);
  Status Free(std::span<const int32_t> pages);

  // Internal error describing the first broken invariant, or OK.
  Status CheckIntegrity() const;

 private:
  std::vector<int32_t> free_list_;  // stack of free page ids (top = back)
  std::vector<uint8_t> allocated_;  // per page: 1 while handed out
};

}  // namespace tessera::kv

#endif  // TESSERA_KV_PAGE_ALLOCATOR_H_
