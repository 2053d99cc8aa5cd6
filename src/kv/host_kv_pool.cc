#include "kv/host_kv_pool.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <limits>

namespace tessera::kv {

StatusOr<HostLayout> ParseHostLayout(std::string_view name) {
  if (name == "page_first") return HostLayout::kPageFirst;
  if (name == "layer_first") return HostLayout::kLayerFirst;
  return InvalidArgumentError(fmt::format(
      "unknown --hicache-mem-layout '{}'; use page_first or layer_first",
      name));
}

const char* HostLayoutName(HostLayout layout) {
  return layout == HostLayout::kPageFirst ? "page_first" : "layer_first";
}

HostKvPool::HostKvPool(const KvPool& device_pool, int64_t num_pages,
                       HostLayout layout)
    : layout_(layout),
      page_size_(device_pool.page_size()),
      num_layers_(device_pool.num_layers()),
      num_kv_heads_(device_pool.options().num_kv_heads),
      segment_bytes_(static_cast<uint64_t>(device_pool.page_size()) *
                     static_cast<uint64_t>(device_pool.options().head_dim) *
                     DTypeSize(device_pool.dtype())),
      page_bytes_(KvPool::BytesPerPage(device_pool.options())),
      allocator_(num_pages) {}

HostKvPool::~HostKvPool() { std::free(heap_); }

StatusOr<std::unique_ptr<HostKvPool>> HostKvPool::Create(
    runtime::Device& device, const KvPool& device_pool, int64_t num_pages,
    HostLayout layout) {
  if (num_pages < 1 || num_pages > std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError(fmt::format(
        "the host KV pool needs at least one page (got {}); raise "
        "--hicache-ratio or --hicache-size",
        num_pages));
  }
  std::unique_ptr<HostKvPool> pool(
      new HostKvPool(device_pool, num_pages, layout));
  const uint64_t bytes = pool->total_bytes();
  if (device.plugin().SupportsPinnedHost()) {
    auto buffer = device.AllocateUncached(bytes, TSR_MEM_PINNED_HOST, 4096);
    if (buffer.ok() && (*buffer)->host_pointer() != nullptr) {
      pool->buffer_ = std::move(buffer).value();
      pool->data_ = static_cast<uint8_t*>(pool->buffer_->host_pointer());
    }
  }
  if (pool->data_ == nullptr) {
    const uint64_t rounded = (bytes + 4095) / 4096 * 4096;
    pool->heap_ = static_cast<uint8_t*>(std::aligned_alloc(4096, rounded));
    if (pool->heap_ == nullptr) {
      return ResourceExhaustedError(fmt::format(
          "cannot allocate the host KV pool: {} pages of {} bytes ({} MiB); "
          "lower --hicache-ratio or --hicache-size",
          num_pages, pool->page_bytes_, bytes >> 20));
    }
    pool->data_ = pool->heap_;
  }
  return pool;
}

uint64_t HostKvPool::SegmentOffset(int32_t page, int64_t layer, int kv,
                                   int64_t head) const {
  const uint64_t seg_index =
      static_cast<uint64_t>((layer * 2 + kv) * num_kv_heads_ + head);
  if (layout_ == HostLayout::kPageFirst) {
    return static_cast<uint64_t>(page) * page_bytes_ +
           seg_index * segment_bytes_;
  }
  return seg_index * static_cast<uint64_t>(num_pages()) * segment_bytes_ +
         static_cast<uint64_t>(page) * segment_bytes_;
}

std::span<uint8_t> HostKvPool::PageBytes(int32_t page) const {
  return {data_ + static_cast<uint64_t>(page) * page_bytes_, page_bytes_};
}

void HostKvPool::ReadPage(int32_t page, std::span<uint8_t> object) const {
  if (layout_ == HostLayout::kPageFirst) {
    std::memcpy(object.data(), PageBytes(page).data(), page_bytes_);
    return;
  }
  uint64_t at = 0;
  for (int64_t l = 0; l < num_layers_; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      for (int64_t h = 0; h < num_kv_heads_; ++h) {
        std::memcpy(object.data() + at, data_ + SegmentOffset(page, l, kv, h),
                    segment_bytes_);
        at += segment_bytes_;
      }
    }
  }
}

void HostKvPool::WritePage(int32_t page, std::span<const uint8_t> object) {
  if (layout_ == HostLayout::kPageFirst) {
    std::memcpy(PageBytes(page).data(), object.data(), page_bytes_);
    return;
  }
  uint64_t at = 0;
  for (int64_t l = 0; l < num_layers_; ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      for (int64_t h = 0; h < num_kv_heads_; ++h) {
        std::memcpy(data_ + SegmentOffset(page, l, kv, h), object.data() + at,
                    segment_bytes_);
        at += segment_bytes_;
      }
    }
  }
}

}  // namespace tessera::kv
