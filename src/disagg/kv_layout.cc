#include "disagg/kv_layout.h"

#include <fmt/format.h>
#include <xxhash.h>

#include "base/dtype.h"

namespace tessera::disagg {

KvLayout KvLayout::Of(const kv::KvPool& pool, std::string model_fingerprint) {
  KvLayout l;
  l.model = std::move(model_fingerprint);
  l.num_layers = pool.num_layers();
  l.num_kv_heads = pool.options().num_kv_heads;
  l.head_dim = pool.options().head_dim;
  l.dtype = std::string(DTypeName(pool.dtype()));
  l.page_size = pool.page_size();
  l.slab_slots = pool.slab_slots();
  return l;
}

Json KvLayout::ToJson() const {
  return Json{{"model", model},           {"num_layers", num_layers},
              {"num_kv_heads", num_kv_heads}, {"head_dim", head_dim},
              {"dtype", dtype},           {"page_size", page_size},
              {"tp_size", tp_size},       {"slab_slots", slab_slots}};
}

StatusOr<KvLayout> KvLayout::FromJson(const Json& j) {
  try {
    KvLayout l;
    l.model = j.at("model").get<std::string>();
    l.num_layers = j.at("num_layers").get<int64_t>();
    l.num_kv_heads = j.at("num_kv_heads").get<int64_t>();
    l.head_dim = j.at("head_dim").get<int64_t>();
    l.dtype = j.at("dtype").get<std::string>();
    l.page_size = j.at("page_size").get<int32_t>();
    l.tp_size = j.at("tp_size").get<int32_t>();
    l.slab_slots = j.at("slab_slots").get<int64_t>();
    return l;
  } catch (const std::exception& e) {
    return InvalidArgumentError(
        fmt::format("malformed KV layout from the peer: {}", e.what()));
  }
}

std::string LayoutMismatch(const KvLayout& p, const KvLayout& d) {
  std::string out;
  auto check = [&out](const char* what, const auto& a, const auto& b) {
    if (a == b) return;
    if (!out.empty()) out += "; ";
    out += fmt::format("{}: prefill {} vs decode {}", what, a, b);
  };
  check("model", p.model, d.model);
  check("layers", p.num_layers, d.num_layers);
  check("kv heads", p.num_kv_heads, d.num_kv_heads);
  check("head dim", p.head_dim, d.head_dim);
  check("KV dtype", p.dtype, d.dtype);
  check("page size", p.page_size, d.page_size);
  check("tp size", p.tp_size, d.tp_size);
  if (out.empty()) return out;
  return "the prefill and decode servers' KV layouts differ (" + out +
         "); start both with the same model, --page-size, --kv-cache-dtype "
         "and --tp-size";
}

Status CheckHostAddressable(const kv::KvPool& pool) {
  for (int64_t l = 0; l < pool.num_layers(); ++l) {
    if (pool.k_buffer(l).host_pointer() == nullptr ||
        pool.v_buffer(l).host_pointer() == nullptr) {
      return FailedPreconditionError(
          "this plugin's KV memory is not host-addressable, and PD "
          "disaggregation registers the KV slabs with UCX directly (staging "
          "through pinned host buffers is not implemented yet); run the "
          "prefill and decode servers on a plugin with host-visible device "
          "memory (cpu)");
    }
  }
  return OkStatus();
}

StatusOr<std::vector<RemoteRegion>> RegisterPool(UcxTransfer& ucx,
                                                 const kv::KvPool& pool) {
  TSR_RETURN_IF_ERROR(CheckHostAddressable(pool));
  std::vector<RemoteRegion> regions;
  for (int64_t l = 0; l < pool.num_layers(); ++l) {
    for (runtime::Buffer* b : {&pool.k_buffer(l), &pool.v_buffer(l)}) {
      TSR_ASSIGN_OR_RETURN(RemoteRegion r,
                           ucx.Register(b->host_pointer(), b->size()));
      regions.push_back(std::move(r));
    }
  }
  return regions;
}

StatusOr<std::vector<PutOp>> PlanPuts(const kv::KvPool& local,
                                      const KvLayout& peer,
                                      std::span<const int32_t> src_slots,
                                      std::span<const int32_t> dst_slots,
                                      int64_t cached, uint64_t* bytes) {
  if (src_slots.size() != dst_slots.size()) {
    return InvalidArgumentError(fmt::format(
        "the prompt has {} positions here but {} on the decode server",
        src_slots.size(), dst_slots.size()));
  }
  TSR_RETURN_IF_ERROR(CheckHostAddressable(local));
  const int64_t n = static_cast<int64_t>(src_slots.size());
  const uint64_t es = DTypeSize(local.dtype());
  const uint64_t row = static_cast<uint64_t>(local.options().head_dim) * es;
  const int64_t heads = local.options().num_kv_heads;
  const uint64_t src_stride = static_cast<uint64_t>(local.slab_slots());
  const uint64_t dst_stride = static_cast<uint64_t>(peer.slab_slots);
  std::vector<PutOp> puts;
  uint64_t total = 0;
  // Runs of positions consecutive in both slot lists.
  std::vector<std::pair<int64_t, int64_t>> runs;  // (first position, length)
  for (int64_t p = std::max<int64_t>(cached, 0); p < n;) {
    int64_t q = p + 1;
    while (q < n && src_slots[q] == src_slots[q - 1] + 1 &&
           dst_slots[q] == dst_slots[q - 1] + 1) {
      ++q;
    }
    runs.emplace_back(p, q - p);
    p = q;
  }
  for (int64_t l = 0; l < local.num_layers(); ++l) {
    for (int kv = 0; kv < 2; ++kv) {
      const runtime::Buffer& b = kv == 0 ? local.k_buffer(l) : local.v_buffer(l);
      const auto* base = static_cast<const uint8_t*>(b.host_pointer());
      const uint32_t region = static_cast<uint32_t>(2 * l + kv);
      for (int64_t h = 0; h < heads; ++h) {
        for (const auto& [p, len] : runs) {
          PutOp op;
          op.src = base + (h * src_stride + static_cast<uint64_t>(src_slots[p])) * row;
          op.region = region;
          op.offset = (h * dst_stride + static_cast<uint64_t>(dst_slots[p])) * row;
          op.length = static_cast<uint64_t>(len) * row;
          total += op.length;
          puts.push_back(op);
        }
      }
    }
  }
  if (bytes != nullptr) *bytes = total;
  return puts;
}

std::string ToHex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

StatusOr<std::string> FromHex(const std::string& hex) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return InvalidArgumentError("odd-length hex string");
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(hex[2 * i]);
    const int lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return InvalidArgumentError("malformed hex string");
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

uint64_t PromptHash(std::span<const int32_t> ids) {
  return XXH3_64bits(ids.data(), ids.size_bytes());
}

}  // namespace tessera::disagg
