#include "kv/page_allocator.h"

#include <fmt/format.h>

namespace tessera::kv {

PageAllocator::PageAllocator(int64_t num_pages)
    : allocated_(static_cast<size_t>(num_pages > 0 ? num_pages : 0), 0) {
  free_list_.reserve(allocated_.size());
  // Pushed in reverse so that the first allocations return 0, 1, 2, ...
  for (int64_t p = num_pages - 1; p >= 0; --p) {
    free_list_.push_back(static_cast<int32_t>(p));
  }
}

bool PageAllocator::IsAllocated(int32_t page) const {
  return page >= 0 && page < num_pages() && allocated_[page] != 0;
}

StatusOr<int32_t> PageAllocator::Allocate() {
  if (free_list_.empty()) {
    return ResourceExhaustedError(fmt::format(
        "KV pool exhausted: asked for 1 page, 0 of {} pages are free; free "
        "finished sequences or start with a larger KV capacity",
        num_pages()));
  }
  int32_t page = free_list_.back();
  free_list_.pop_back();
  allocated_[page] = 1;
  return page;
}

Status PageAllocator::Allocate(int64_t count, std::vector<int32_t>& out) {
  if (count < 0) {
    return InvalidArgumentError(
        fmt::format("cannot allocate a negative number of pages ({})", count));
  }
  if (count > num_free()) {
    return ResourceExhaustedError(fmt::format(
        "KV pool exhausted: asked for {} pages, {} of {} pages are free; free "
        "finished sequences or start with a larger KV capacity",
        count, num_free(), num_pages()));
  }
  out.reserve(out.size() + static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    int32_t page = free_list_.back();
    free_list_.pop_back();
    allocated_[page] = 1;
    out.push_back(page);
  }
  return OkStatus();
}

Status PageAllocator::Free(int32_t page) {
  if (page < 0 || page >= num_pages()) {
    return InvalidArgumentError(fmt::format(
        "cannot free KV page {}: the pool has pages 0..{}", page,
        num_pages() - 1));
  }
  if (allocated_[page] == 0) {
    return InvalidArgumentError(fmt::format(
        "cannot free KV page {}: it is not allocated (a double free?)", page));
  }
  allocated_[page] = 0;
  free_list_.push_back(page);
  return OkStatus();
}

Status PageAllocator::Free(std::span<const int32_t> pages) {
  // In reverse, so that the next Allocate of as many pages pops them in the
  // order given: a block table's pages stay ascending when they are reused
  // (attention streams a sequence's pages in order; descending addresses
  // defeat the CPU's prefetchers and cost decode a third of its speed).
  for (auto it = pages.rbegin(); it != pages.rend(); ++it) {
    TSR_RETURN_IF_ERROR(Free(*it));
  }
  return OkStatus();
}

Status PageAllocator::CheckIntegrity() const {
  std::vector<uint8_t> seen(allocated_.size(), 0);
  for (int32_t page : free_list_) {
    if (page < 0 || page >= num_pages()) {
      return InternalError(
          fmt::format("free list holds page {} outside the pool", page));
    }
    if (seen[page] != 0) {
      return InternalError(
          fmt::format("page {} is on the free list twice", page));
    }
    if (allocated_[page] != 0) {
      return InternalError(fmt::format(
          "page {} is both on the free list and allocated", page));
    }
    seen[page] = 1;
  }
  for (size_t p = 0; p < allocated_.size(); ++p) {
    if (seen[p] == 0 && allocated_[p] == 0) {
      return InternalError(
          fmt::format("page {} is neither free nor allocated (leaked)", p));
    }
  }
  return OkStatus();
}

}  // namespace tessera::kv
