// KvLayout: what both sides of a PD pair must agree on before KV moves —
// the model, the KV pool's geometry and the tensor-parallel layout — plus
// the plan of puts (ucx_transfer.h's PutOp) that copies a prompt's KV
// between two pools.
//
// Pool geometry (kv/kv_pool.h): per layer a K and a V slab, each
// (slab_slots, kv_heads, head_dim) stored head-major, so element
// (slot, head, i) sits at byte ((head * slab_slots + slot) * head_dim + i)
// * dtype_size. The two pools may differ in slab_slots (capacity); all the
// rest must match, or bootstrap refuses the pair naming both values.
//
// Thread-safety: plain values and pure functions.
#ifndef TESSERA_DISAGG_KV_LAYOUT_H_
#define TESSERA_DISAGG_KV_LAYOUT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "disagg/ucx_transfer.h"
#include "kv/kv_pool.h"

namespace tessera::disagg {

using Json = nlohmann::json;

struct KvLayout {
  std::string model;  // architecture and shape fingerprint
  int64_t num_layers = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  std::string dtype;
  int32_t page_size = 0;
  int32_t tp_size = 1;
  int64_t slab_slots = 0;  // this side's; may differ between the sides

  static KvLayout Of(const kv::KvPool& pool, std::string model_fingerprint);
  Json ToJson() const;
  static StatusOr<KvLayout> FromJson(const Json& j);
};

// Empty when a prefill side with `prefill` can write into a decode side
// with `decode`; otherwise a sentence naming every field that differs with
// both sides' values.
std::string LayoutMismatch(const KvLayout& prefill, const KvLayout& decode);

// The puts that copy positions [cached, src_slots.size()) of one prompt from
// the local pool to the peer's: one per (layer, K/V, head) and run of
// positions whose slots are consecutive on both sides. The peer's regions
// are its slabs in the order K0, V0, K1, V1, ...; `local` is this side's
// pool (host-addressable slabs).
StatusOr<std::vector<PutOp>> PlanPuts(const kv::KvPool& local,
                                      const KvLayout& peer,
                                      std::span<const int32_t> src_slots,
                                      std::span<const int32_t> dst_slots,
                                      int64_t cached, uint64_t* bytes);

// Registers every slab of `pool` (K0, V0, K1, ...) with UCX.
// FailedPrecondition when the plugin's KV memory is not host-addressable.
StatusOr<std::vector<RemoteRegion>> RegisterPool(UcxTransfer& ucx,
                                                 const kv::KvPool& pool);

// Fails with FailedPrecondition unless every slab of `pool` has a host
// address (what UCX registers).
Status CheckHostAddressable(const kv::KvPool& pool);

// Byte strings on the JSON wire (worker addresses, rkeys) as hex.
std::string ToHex(const std::string& bytes);
StatusOr<std::string> FromHex(const std::string& hex);

// XXH3 of a prompt's token ids: the two sides check they hold one prompt.
uint64_t PromptHash(std::span<const int32_t> ids);

}  // namespace tessera::disagg

#endif  // TESSERA_DISAGG_KV_LAYOUT_H_
