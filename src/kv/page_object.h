// Page keys and page objects: how the storage tier (HiCache L3) names and
// stores one KV page.
//
// Key: a 128-bit hash chain over token ids (XXH3-128, Debian's libxxhash),
// so the key of page i covers the whole prefix before it:
//   key_0 = XXH3_128(tokens[0, ps), seed = identity)
//   key_i = XXH3_128(key_{i-1} (16 bytes) ++ tokens[i*ps, (i+1)*ps),
//                    seed = identity)
// `identity` is the model/layout fingerprint (ModelIdentity): pages of
// another model, dtype, page size or KV geometry never share a key.
//
// Object: a 64-byte little-endian header, then the page's bytes in
// page_first order (HostKvPool::ReadPage):
//   magic "TSRKVP01" | identity u64 | key hi u64 | key lo u64 |
//   payload bytes u64 | XXH3-64 checksum of the payload u64 |
//   page_size u32 | reserved u32 | reserved u64
// DecodePageObject refuses (DataLoss, saying why) a truncated object, a bad
// magic, another identity or key, a wrong size or checksum: the caller
// treats that as a miss, never as KV.
#ifndef TESSERA_KV_PAGE_OBJECT_H_
#define TESSERA_KV_PAGE_OBJECT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::kv {

struct PageKey {
  uint64_t hi = 0;
  uint64_t lo = 0;
  bool operator==(const PageKey& o) const { return hi == o.hi && lo == o.lo; }
  bool operator<(const PageKey& o) const {
    return hi != o.hi ? hi < o.hi : lo < o.lo;
  }
  std::string Hex() const;  // 32 lowercase hex digits
};

// The fingerprint of a model's KV layout: hashes `model` (what identifies
// the weights, e.g. the config text and weight sizes) with the geometry.
uint64_t ModelIdentity(std::string_view model, int64_t num_layers,
                       int64_t num_kv_heads, int64_t head_dim, int dtype,
                       int32_t page_size);

// Keys of pages [first_page, first_page + count) of `tokens` (which holds
// at least (first_page + count) * page_size ids). The chain is computed
// from page 0.
std::vector<PageKey> ChainKeys(uint64_t identity,
                               std::span<const int32_t> tokens,
                               int32_t page_size, int64_t first_page,
                               int64_t count);

inline constexpr size_t kPageObjectHeaderBytes = 64;

std::vector<uint8_t> EncodePageObject(uint64_t identity, const PageKey& key,
                                      int32_t page_size,
                                      std::span<const uint8_t> payload);
// The payload of `object`, checked against identity, key and size.
StatusOr<std::span<const uint8_t>> DecodePageObject(
    std::span<const uint8_t> object, uint64_t identity, const PageKey& key,
    uint64_t payload_bytes);

}  // namespace tessera::kv

#endif  // TESSERA_KV_PAGE_OBJECT_H_
