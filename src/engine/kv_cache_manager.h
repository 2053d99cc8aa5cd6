// KvCacheManager: the KV pages of running sequences on top of the paged
// KvPool and the RadixCache (RadixAttention prefix sharing).
//
// A sequence's block table (SequenceKv::pages) has two parts:
//   pages[0, cache_len / page_size)  pages owned by the radix cache, shared
//                                    and locked (lock_node) while in use;
//   pages[cache_len / page_size, ..) the sequence's own pages from the pool.
// Slot of position p: pages[p / ps] * ps + p % ps (KvPool::SlotOf).
//
// Life of a sequence:
//   MatchAndLock   at admission: reuse the longest cached prefix (whole
//                  pages), lock it against eviction;
//   Reserve        before each step: grow own pages to cover the positions
//                  the step writes, evicting unlocked cache leaves (LRU)
//                  when the pool is short; ResourceExhausted when even that
//                  is not enough (the scheduler then retracts someone);
//   CacheComputed  after a prefill (chunk): hand the computed, page-aligned
//                  prefix to the cache so other requests (n > 1 siblings,
//                  shared system prompts) can reuse it while this one runs;
//   Release        finished, aborted or retracted: insert every computed
//                  token (prompt and generated) into the cache, free the
//                  rest, unlock. A retracted sequence finds its own KV there
//                  when it is admitted again, unless it was evicted.
// With the cache disabled (--disable-radix-cache) nothing is ever shared
// and Release frees every page.
//
// Host tier (AttachHostTier, --enable-hierarchical-cache): eviction demotes
// nodes with a host copy instead of dropping them, inserts and matches
// trigger backups per the write policy, and StartLoad brings a prompt's
// host-only prefix back before the request is admitted (hicache.h).
//
// Ownership: pages move between the pool, sequences and the cache only
// through these calls, so pool pages = free + own pages of live sequences +
// pages in the cache (CheckIntegrity verifies the pool and the tree).
// Thread-safety: not thread-safe; the scheduler thread owns it.
#ifndef TESSERA_ENGINE_KV_CACHE_MANAGER_H_
#define TESSERA_ENGINE_KV_CACHE_MANAGER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/hicache.h"
#include "kv/kv_pool.h"
#include "kv/radix_cache.h"

namespace tessera::engine {

struct SequenceKv {
  std::vector<int32_t> pages;  // block table
  int64_t cache_len = 0;       // prefix owned by the cache (whole pages)
  kv::RadixNode* lock_node = nullptr;  // locked node ending at cache_len
};

class KvCacheManager {
 public:
  KvCacheManager(kv::KvPool& pool, kv::RadixCache& cache)
      : pool_(pool), cache_(cache) {}

  // Adds the host tier (made over this manager's pool and cache).
  void AttachHostTier(std::unique_ptr<HiCache> hicache) {
    hicache_ = std::move(hicache);
  }
  HiCache* hicache() const { return hicache_.get(); }
  // Host tier: starts loading back the host-only continuation of `tokens`'
  // cached prefix; true while such a load is in flight (admit the request
  // after it). False without a host tier or when nothing is to load.
  bool StartLoad(std::span<const int32_t> tokens) {
    return hicache_ != nullptr && hicache_->StartLoad(tokens);
  }
  // Host tier: applies finished transfers (every step).
  void PollTransfers() {
    if (hicache_ != nullptr) hicache_->Poll();
  }
  // Host tier: waits for every transfer in flight and applies it.
  void DrainTransfers() {
    if (hicache_ != nullptr) hicache_->Drain();
  }

  // Matches tokens against the cache (whole pages), locks the match and
  // makes it the start of seq's block table. `seq` must be empty. Returns
  // the matched length. Counts in the cache's hit statistics.
  int64_t MatchAndLock(std::span<const int32_t> tokens, SequenceKv& seq);

  // Grows seq's own pages to cover `num_tokens` positions, evicting from
  // the cache when needed. All-or-nothing; ResourceExhausted otherwise.
  Status Reserve(SequenceKv& seq, int64_t num_tokens);

  // True when Reserve(seq, num_tokens) would succeed now.
  bool CanReserve(const SequenceKv& seq, int64_t num_tokens) const;

  // Caches `computed` (the sequence's first tokens, all with KV written) in
  // the tree and re-points seq's prefix at the cached pages (duplicates of
  // pages already cached are freed). No-op when the cache is disabled.
  Status CacheComputed(std::span<const int32_t> computed, SequenceKv& seq);

  // Inserts `computed` into the cache, frees seq's other pages and unlocks
  // its prefix. `seq` is empty afterwards.
  Status Release(std::span<const int32_t> computed, SequenceKv& seq);

  // Tokens that could be reserved now: free pages plus evictable cache.
  int64_t AvailableTokens() const;
  // Tokens held by live sequences and locked cache nodes (pool usage that
  // cannot be reclaimed by eviction).
  int64_t UsedTokens() const;
  int64_t CapacityTokens() const { return pool_.num_slots(); }

  kv::KvPool& pool() const { return pool_; }
  kv::RadixCache& cache() const { return cache_; }

  // Frees every unlocked cache entry of every tier (/flush_cache with
  // nothing running); the storage tier only with include_storage (the
  // engine's warm-up keeps what earlier runs stored).
  Status Flush(bool include_storage = true);
  // One tier: "device" (demotes what has a host copy, drops the rest),
  // "host" or "storage". InvalidArgument for another name or a tier this
  // server does not have.
  Status FlushTier(std::string_view tier);

  // Pool and tree invariants, plus: cached tokens never exceed the pool.
  Status CheckIntegrity() const;

 private:
  std::vector<int32_t> SlotsOf(const SequenceKv& seq, int64_t n) const;
  void FreeSlots(std::span<const int32_t> slots);
  void Unlock(SequenceKv& seq);
  // Inserts into the cache, with the host tier's hooks around it.
  StatusOr<int64_t> Insert(std::span<const int32_t> tokens,
                           std::span<const int32_t> slots);
  void Evict(int64_t num_tokens);

  kv::KvPool& pool_;
  kv::RadixCache& cache_;
  std::unique_ptr<HiCache> hicache_;  // null without a host tier
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_KV_CACHE_MANAGER_H_
