#include "kv/page_object.h"

#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>

namespace tessera::kv {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'K', 'V', 'P', '0', '1'};

void PutU64(uint8_t* at, uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t GetU64(const uint8_t* at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(at[i]) << (8 * i);
  return v;
}

}  // namespace

std::string PageKey::Hex() const { return fmt::format("{:016x}{:016x}", hi, lo); }

uint64_t ModelIdentity(std::string_view model, int64_t num_layers,
                       int64_t num_kv_heads, int64_t head_dim, int dtype,
                       int32_t page_size) {
  const std::string text =
      fmt::format("tessera-kv-page v1|{}|L{}|H{}|D{}|T{}|P{}", model,
                  num_layers, num_kv_heads, head_dim, dtype, page_size);
  return XXH3_64bits(text.data(), text.size());
}

std::vector<PageKey> ChainKeys(uint64_t identity,
                               std::span<const int32_t> tokens,
                               int32_t page_size, int64_t first_page,
                               int64_t count) {
  std::vector<PageKey> keys;
  keys.reserve(static_cast<size_t>(count));
  std::vector<uint8_t> buf(16 + static_cast<size_t>(page_size) * 4);
  PageKey prev;
  for (int64_t p = 0; p < first_page + count; ++p) {
    const uint8_t* page =
        reinterpret_cast<const uint8_t*>(tokens.data() + p * page_size);
    const size_t page_bytes = static_cast<size_t>(page_size) * 4;
    XXH128_hash_t h;
    if (p == 0) {
      h = XXH3_128bits_withSeed(page, page_bytes, identity);
    } else {
      PutU64(buf.data(), prev.hi);
      PutU64(buf.data() + 8, prev.lo);
      std::memcpy(buf.data() + 16, page, page_bytes);
      h = XXH3_128bits_withSeed(buf.data(), buf.size(), identity);
    }
    prev = PageKey{h.high64, h.low64};
    if (p >= first_page) keys.push_back(prev);
  }
  return keys;
}

std::vector<uint8_t> EncodePageObject(uint64_t identity, const PageKey& key,
                                      int32_t page_size,
                                      std::span<const uint8_t> payload) {
  std::vector<uint8_t> out(kPageObjectHeaderBytes + payload.size(), 0);
  std::memcpy(out.data(), kMagic, 8);
  PutU64(out.data() + 8, identity);
  PutU64(out.data() + 16, key.hi);
  PutU64(out.data() + 24, key.lo);
  PutU64(out.data() + 32, payload.size());
  PutU64(out.data() + 40, XXH3_64bits(payload.data(), payload.size()));
  PutU64(out.data() + 48, static_cast<uint32_t>(page_size));
  std::memcpy(out.data() + kPageObjectHeaderBytes, payload.data(),
              payload.size());
  return out;
}

StatusOr<std::span<const uint8_t>> DecodePageObject(
    std::span<const uint8_t> object, uint64_t identity, const PageKey& key,
    uint64_t payload_bytes) {
  if (object.size() < kPageObjectHeaderBytes) {
    return DataLossError(fmt::format("page object of {} bytes is truncated",
                                     object.size()));
  }
  const uint8_t* h = object.data();
  if (std::memcmp(h, kMagic, 8) != 0) {
    return DataLossError("not a Tessera KV page object (bad magic)");
  }
  if (GetU64(h + 8) != identity) {
    return DataLossError(
        "the page belongs to another model or KV layout (identity differs)");
  }
  if (GetU64(h + 16) != key.hi || GetU64(h + 24) != key.lo) {
    return DataLossError("the page object holds another key");
  }
  const uint64_t size = GetU64(h + 32);
  if (size != payload_bytes ||
      object.size() != kPageObjectHeaderBytes + payload_bytes) {
    return DataLossError(fmt::format(
        "page object payload is {} bytes ({} stored), expected {}",
        object.size() - kPageObjectHeaderBytes, size, payload_bytes));
  }
  auto payload = object.subspan(kPageObjectHeaderBytes);
  if (XXH3_64bits(payload.data(), payload.size()) != GetU64(h + 40)) {
    return DataLossError("page object checksum mismatch (corrupt payload)");
  }
  return payload;
}

}  // namespace tessera::kv
