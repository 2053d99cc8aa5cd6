#include "kv/kv_pool.h"

#include <fmt/format.h>

#include <limits>

#include "runtime/tensor.h"

namespace tessera::kv {
namespace {

Status ValidateOptions(const KvPoolOptions& o) {
  if (o.num_layers <= 0 || o.num_kv_heads <= 0 || o.head_dim <= 0) {
    return InvalidArgumentError(fmt::format(
        "KV pool needs positive layers, kv heads and head dim; got layers {}, "
        "kv_heads {}, head_dim {}",
        o.num_layers, o.num_kv_heads, o.head_dim));
  }
  if (o.page_size <= 0) {
    return InvalidArgumentError(fmt::format(
        "KV page size must be at least 1 slot, got {}", o.page_size));
  }
  if (!IsFloatDType(o.dtype)) {
    return InvalidArgumentError(fmt::format(
        "KV pool dtype must be f32, bf16 or f16, got {}", DTypeName(o.dtype)));
  }
  const bool by_tokens = o.capacity_tokens > 0;
  const bool by_budget = o.memory_budget_bytes > 0;
  if (by_tokens == by_budget) {
    return InvalidArgumentError(fmt::format(
        "size the KV pool by exactly one of a token capacity or a memory "
        "budget; got capacity_tokens {} and memory_budget_bytes {}",
        o.capacity_tokens, o.memory_budget_bytes));
  }
  return OkStatus();
}

}  // namespace

uint64_t KvPool::BytesPerPage(const KvPoolOptions& o) {
  return 2ull * static_cast<uint64_t>(o.num_layers) *
         static_cast<uint64_t>(o.page_size) *
         static_cast<uint64_t>(o.num_kv_heads) *
         static_cast<uint64_t>(o.head_dim) * DTypeSize(o.dtype);
}

StatusOr<std::unique_ptr<KvPool>> KvPool::Create(runtime::Device& device,
                                                 const KvPoolOptions& options) {
  TSR_RETURN_IF_ERROR(ValidateOptions(options));
  const uint64_t page_bytes = BytesPerPage(options);
  int64_t num_pages = 0;
  if (options.capacity_tokens > 0) {
    num_pages = PagesForTokens(options.capacity_tokens, options.page_size);
  } else {
    num_pages = static_cast<int64_t>(options.memory_budget_bytes / page_bytes);
    if (num_pages == 0) {
      return InvalidArgumentError(fmt::format(
          "a KV memory budget of {} bytes holds no page: one page of {} "
          "slots costs {} bytes; raise the budget or lower the page size",
          options.memory_budget_bytes, options.page_size, page_bytes));
    }
  }
  // Slots are addressed by the ops with int32 ids (the scratch page too).
  if ((num_pages + 1) * static_cast<int64_t>(options.page_size) >
      std::numeric_limits<int32_t>::max()) {
    return InvalidArgumentError(fmt::format(
        "a KV pool of {} pages x {} slots exceeds the int32 slot range; "
        "lower the capacity",
        num_pages, options.page_size));
  }

  std::unique_ptr<KvPool> pool(new KvPool(options, num_pages));
  const uint64_t slab_bytes = static_cast<uint64_t>(num_pages + 1) *
                              static_cast<uint64_t>(options.page_size) *
                              static_cast<uint64_t>(options.num_kv_heads) *
                              static_cast<uint64_t>(options.head_dim) *
                              DTypeSize(options.dtype);
  for (int64_t layer = 0; layer < options.num_layers; ++layer) {
    for (auto* slabs : {&pool->k_slabs_, &pool->v_slabs_}) {
      auto buffer = device.AllocateUncached(slab_bytes);
      if (!buffer.ok()) {
        return Status(buffer.status().code(),
                      fmt::format("cannot allocate the KV pool on {}: {} "
                                  "pages of {} bytes ({} bytes in all) do not "
                                  "fit; lower the KV capacity: {}",
                                  device.Label(), num_pages, page_bytes,
                                  page_bytes * num_pages,
                                  buffer.status().message()));
      }
      if (options.zero_fill) TSR_RETURN_IF_ERROR((*buffer)->Fill(0));
      slabs->push_back(std::move(buffer).value());
    }
  }
  return pool;
}

uint64_t KvPool::total_bytes() const {
  return BytesPerPage(options_) * static_cast<uint64_t>(num_pages());
}

Status KvPool::EnsureCapacity(std::vector<int32_t>& pages,
                              int64_t num_tokens) {
  const int64_t needed = PagesForTokens(num_tokens, page_size());
  const int64_t have = static_cast<int64_t>(pages.size());
  if (needed <= have) return OkStatus();
  Status status = allocator_.Allocate(needed - have, pages);
  if (!status.ok()) {
    return status.WithContext(fmt::format(
        "cannot grow a sequence from {} to {} tokens", have * page_size(),
        num_tokens));
  }
  return OkStatus();
}

Status KvPool::Release(std::vector<int32_t>& pages) {
  Status status = allocator_.Free(pages);
  pages.clear();
  return status;
}

tsr_tensor KvPool::SlabView(const runtime::Buffer& buffer) const {
  // Head-major: element (slot, head, i) at (head * S + slot) * D + i.
  tsr_tensor t = buffer.View(options_.dtype,
                             {slab_slots(), options_.num_kv_heads, options_.head_dim});
  t.strides[0] = options_.head_dim;
  t.strides[1] = slab_slots() * options_.head_dim;
  t.strides[2] = 1;
  return t;
}

tsr_tensor KvPool::KCache(int64_t layer) const {
  return SlabView(*k_slabs_.at(layer));
}
tsr_tensor KvPool::VCache(int64_t layer) const {
  return SlabView(*v_slabs_.at(layer));
}

Status KvPool::CheckIntegrity() const {
  TSR_RETURN_IF_ERROR(allocator_.CheckIntegrity());
  if (static_cast<int64_t>(k_slabs_.size()) != num_layers() ||
      static_cast<int64_t>(v_slabs_.size()) != num_layers()) {
    return InternalError(fmt::format(
        "KV pool has {} K and {} V slabs for {} layers", k_slabs_.size(),
        v_slabs_.size(), num_layers()));
  }
  const uint64_t slab_bytes = BytesPerPage(options_) *
                              static_cast<uint64_t>(num_pages() + 1) /
                              (2 * num_layers());
  for (int64_t l = 0; l < num_layers(); ++l) {
    if (k_slabs_[l]->size() != slab_bytes || v_slabs_[l]->size() != slab_bytes) {
      return InternalError(fmt::format(
          "KV slab of layer {} holds {}/{} bytes, expected {}", l,
          k_slabs_[l]->size(), v_slabs_[l]->size(), slab_bytes));
    }
  }
  return OkStatus();
}

}  // namespace tessera::kv
