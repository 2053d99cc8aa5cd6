#include "engine/kv_cache_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tessera::engine {

std::vector<int32_t> KvCacheManager::SlotsOf(const SequenceKv& seq,
                                             int64_t n) const {
  std::vector<int32_t> slots(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) slots[p] = pool_.SlotOf(seq.pages, p);
  return slots;
}

void KvCacheManager::FreeSlots(std::span<const int32_t> slots) {
  const int32_t ps = pool_.page_size();
  std::vector<int32_t> pages;
  pages.reserve(slots.size() / ps + 1);
  for (size_t i = 0; i < slots.size(); i += ps) pages.push_back(slots[i] / ps);
  (void)pool_.FreePages(pages);
}

void KvCacheManager::Unlock(SequenceKv& seq) {
  if (seq.lock_node != nullptr && seq.lock_node != cache_.root()) {
    (void)cache_.DecLockRef(seq.lock_node);
  }
  seq.lock_node = nullptr;
}

StatusOr<int64_t> KvCacheManager::Insert(std::span<const int32_t> tokens,
                                         std::span<const int32_t> slots) {
  if (hicache_ == nullptr) return cache_.Insert(tokens, slots);
  // A loading node's pages are being written: finish loads before an
  // insert could re-point a sequence at them.
  if (cache_.loading_nodes() > 0) hicache_->FinishLoads();
  std::vector<kv::RadixNode*> path;
  StatusOr<int64_t> already = cache_.Insert(tokens, slots, &path);
  if (already.ok()) hicache_->OnInserted(path);
  return already;
}

void KvCacheManager::Evict(int64_t num_tokens) {
  if (hicache_ != nullptr) {
    cache_.Evict(num_tokens, hicache_->EvictHooks());
  } else {
    cache_.Evict(num_tokens,
                 [this](std::span<const int32_t> slots) { FreeSlots(slots); });
  }
}

int64_t KvCacheManager::MatchAndLock(std::span<const int32_t> tokens,
                                     SequenceKv& seq) {
  kv::RadixCache::MatchResult match = cache_.MatchPrefix(tokens);
  const int32_t ps = pool_.page_size();
  seq.pages.clear();
  for (int64_t i = 0; i < match.length; i += ps) {
    seq.pages.push_back(match.slots[i] / ps);
  }
  seq.cache_len = match.length;
  seq.lock_node = match.last_node;
  if (seq.lock_node != cache_.root()) cache_.IncLockRef(seq.lock_node);
  if (hicache_ != nullptr) hicache_->OnMatched(match.last_node);
  return match.length;
}

bool KvCacheManager::CanReserve(const SequenceKv& seq,
                                int64_t num_tokens) const {
  const int64_t need =
      kv::KvPool::PagesForTokens(num_tokens, pool_.page_size()) -
      static_cast<int64_t>(seq.pages.size());
  if (need <= 0) return true;
  return need * pool_.page_size() <= AvailableTokens();
}

Status KvCacheManager::Reserve(SequenceKv& seq, int64_t num_tokens) {
  const int32_t ps = pool_.page_size();
  const int64_t need = kv::KvPool::PagesForTokens(num_tokens, ps) -
                       static_cast<int64_t>(seq.pages.size());
  if (need <= 0) return OkStatus();
  const int64_t short_pages = need - pool_.num_free_pages();
  if (short_pages > 0) Evict(short_pages * ps);
  if (pool_.num_free_pages() < need) {
    return ResourceExhaustedError(fmt::format(
        "KV pool exhausted: {} more pages needed, {} free and nothing more "
        "evictable",
        need, pool_.num_free_pages()));
  }
  return pool_.EnsureCapacity(seq.pages, num_tokens);
}

Status KvCacheManager::CacheComputed(std::span<const int32_t> computed,
                                     SequenceKv& seq) {
  if (cache_.disabled()) return OkStatus();
  const int32_t ps = pool_.page_size();
  const int64_t n = static_cast<int64_t>(computed.size());
  const int64_t aligned = n - n % ps;
  if (aligned <= seq.cache_len) return OkStatus();
  std::vector<int32_t> slots = SlotsOf(seq, aligned);
  TSR_ASSIGN_OR_RETURN(int64_t already,
                       Insert(computed.first(aligned), slots));
  // Own pages duplicating what another sequence cached first: free them
  // and use the cached ones (identical contents: same tokens, positions).
  std::vector<int32_t> duplicates;
  for (int64_t p = seq.cache_len; p < already; p += ps) {
    duplicates.push_back(seq.pages[p / ps]);
  }
  kv::RadixCache::MatchResult match =
      cache_.MatchPrefix(computed.first(aligned), /*record_stats=*/false);
  if (match.length != aligned) {
    return InternalError(fmt::format(
        "radix cache lost a just-inserted prefix ({} of {} tokens)",
        match.length, aligned));
  }
  for (int64_t p = 0; p < aligned; p += ps) {
    seq.pages[p / ps] = match.slots[p] / ps;
  }
  if (match.last_node != cache_.root()) cache_.IncLockRef(match.last_node);
  Unlock(seq);
  seq.lock_node = match.last_node;
  seq.cache_len = aligned;
  if (!duplicates.empty()) TSR_RETURN_IF_ERROR(pool_.FreePages(duplicates));
  return OkStatus();
}

Status KvCacheManager::Release(std::span<const int32_t> computed,
                               SequenceKv& seq) {
  const int32_t ps = pool_.page_size();
  const int64_t n = std::min<int64_t>(
      static_cast<int64_t>(computed.size()),
      static_cast<int64_t>(seq.pages.size()) * ps);
  const int64_t aligned = n - n % ps;
  int64_t taken_begin = aligned;  // cache took own pages [begin, aligned)
  if (n > 0 && !cache_.disabled() && aligned > seq.cache_len) {
    std::vector<int32_t> slots = SlotsOf(seq, n);
    StatusOr<int64_t> already = Insert(computed.first(n), slots);
    if (already.ok()) taken_begin = std::max(*already, seq.cache_len);
  }
  std::vector<int32_t> to_free;
  const int64_t first_own = seq.cache_len / ps;
  for (int64_t i = first_own; i < static_cast<int64_t>(seq.pages.size());
       ++i) {
    const bool taken = i * ps >= taken_begin && (i + 1) * ps <= aligned;
    if (!taken) to_free.push_back(seq.pages[i]);
  }
  Unlock(seq);
  seq.pages.clear();
  seq.cache_len = 0;
  return pool_.FreePages(to_free);
}

int64_t KvCacheManager::AvailableTokens() const {
  return pool_.num_free_pages() * pool_.page_size() +
         cache_.evictable_size();
}

int64_t KvCacheManager::UsedTokens() const {
  return pool_.num_used_pages() * pool_.page_size() -
         cache_.evictable_size();
}

Status KvCacheManager::Flush(bool include_storage) {
  if (hicache_ != nullptr) {
    hicache_->Drain();
    if (include_storage && hicache_->has_storage()) {
      TSR_RETURN_IF_ERROR(hicache_->FlushStorage());
    }
  }
  return cache_.Reset(
      [this](std::span<const int32_t> slots) { FreeSlots(slots); },
      [this](std::span<const int32_t> pages) {
        if (hicache_ != nullptr) hicache_->FreeHostPages(pages);
      });
}

Status KvCacheManager::FlushTier(std::string_view tier) {
  if (tier == "device") {
    if (hicache_ == nullptr) return Flush();
    hicache_->Drain();
    if (cache_.protected_size() > 0) {
      return FailedPreconditionError(
          "cannot flush the device tier while requests hold cached pages");
    }
    cache_.Evict(std::numeric_limits<int64_t>::max(), hicache_->EvictHooks());
    return OkStatus();
  }
  if (tier == "host" || tier == "storage") {
    if (hicache_ == nullptr) {
      return InvalidArgumentError(fmt::format(
          "this server has no {} tier; start it with "
          "--enable-hierarchical-cache",
          tier));
    }
    if (tier == "host") return hicache_->FlushHost();
    return hicache_->FlushStorage();
  }
  return InvalidArgumentError(fmt::format(
      "unknown cache tier '{}'; use device, host or storage (or no tier for "
      "all)",
      tier));
}

Status KvCacheManager::CheckIntegrity() const {
  TSR_RETURN_IF_ERROR(pool_.CheckIntegrity());
  TSR_RETURN_IF_ERROR(cache_.CheckIntegrity());
  if (hicache_ != nullptr) TSR_RETURN_IF_ERROR(hicache_->CheckIntegrity());
  if (cache_.total_size() > pool_.num_used_pages() * pool_.page_size()) {
    return InternalError(fmt::format(
        "radix cache holds {} tokens but only {} pool slots are in use",
        cache_.total_size(), pool_.num_used_pages() * pool_.page_size()));
  }
  return OkStatus();
}

}  // namespace tessera::engine
