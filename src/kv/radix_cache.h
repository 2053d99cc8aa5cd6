// RadixCache: the token-keyed prefix cache over KV slots (RadixAttention).
//
// A radix tree whose edges are token-id sequences. Each non-root node holds
//   key:   (len,) token ids of its edge,
//   slots: (len,) int32 KV slot indices of those tokens, as the paged pool
//          addresses them (slot = page * page_size + offset),
// plus its parent, a lock_ref count and a last-access tick (a monotonic
// counter, not wall time). A request whose prompt shares a cached prefix
// reuses those slots instead of recomputing them.
//
// Paging: with page_size > 1 the tree works in whole pages, as SGLang does
// for paged caches. Edge lengths are multiples of page_size, nodes split
// only at page boundaries, MatchPrefix results are truncated down to whole
// pages, and Insert caches only the page-aligned prefix of its input.
// Children are keyed by the first page of their edge (page_size tokens; the
// first token when page_size == 1), so siblings never share a first page.
// Slots of one page must be page-contiguous: slots[i*ps + j] ==
// slots[i*ps] + j with slots[i*ps] % ps == 0; Insert rejects anything else.
//
// Ownership of slots: slots in the tree belong to the cache; they go back to
// the pool only through the FreeFn given to Evict or Reset. Insert returns
// how much of its input was already cached; the caller still owns (and
// normally frees) those duplicate slots and the unaligned tail.
//
// Locking: IncLockRef(n) adds one to lock_ref of n and every ancestor up to
// (not including) the root; DecLockRef undoes it. A node with lock_ref > 0 is
// never evicted. Node pointers stay valid while the node is locked (splits
// keep the deeper half as the original object); an unlocked node may be
// evicted by the next Evict.
//
// Invariants (CheckIntegrity verifies them all):
//  - every child's map key equals the first page of its key; parent pointers
//    point back; no non-root node has an empty key; key and slot lengths are
//    equal and multiples of page_size; slot pages are contiguous;
//  - lock_ref(n) == direct_locks(n) + sum of lock_ref over n's children,
//    where direct_locks(n) counts IncLockRef(n) calls not yet undone; so
//    lock_ref(n) >= 0 and lock_ref(parent) >= sum of its children's;
//  - evictable_size() (tokens in nodes with lock_ref == 0) and
//    protected_size() (lock_ref > 0) equal a recomputation over the tree;
//  - no slot appears twice in the tree; no tick is beyond the clock;
//  - every node is on the device, on the host or both; a device node's
//    parent is on the device (or the root); a loading node is on both and
//    locked; no host page appears twice; host_size() equals the tree's.
//
// Host tier (HiCache, --enable-hierarchical-cache): a node's KV may live
// on the device (slots), in the host pool (host_pages: one host page per
// page of its key), or both. Device eviction then *demotes* a node whose
// KV is on the host (its device slots are freed, the node stays, host-only)
// instead of dropping it; a later match finds the host-only part
// (MatchResult::host_length) and the caller loads it back: MatchHost splits
// and returns those nodes, SetDeviceSlots gives them fresh device pages
// marked loading (a loading node is locked by the caller and never
// matched) until the copy is acknowledged (SetLoading false). Insert over a
// host-only node adopts the caller's slots for it. Device-resident nodes
// are closed under ancestors: a node on the device has a parent on the
// device (or the root). evictable/protected sizes count device tokens only;
// host_size() counts host tokens.
//
// Disabled mode (--disable-radix-cache): MatchPrefix always matches 0 tokens
// (queries still count in the statistics) and Insert takes nothing and
// returns the full length, so the caller frees every slot at once.
//
// Thread-safety: not thread-safe. The scheduler thread owns the cache (and
// the KV pool it sits on) and serialises every call.
#ifndef TESSERA_KV_RADIX_CACHE_H_
#define TESSERA_KV_RADIX_CACHE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"

namespace tessera::kv {

class RadixCache;
class RadixCacheTestPeer;  // test-only: corrupts trees for CheckIntegrity tests

class RadixNode {
 public:
  const std::vector<int32_t>& key() const { return key_; }
  // (len,) device slots, or empty when the KV is not on the device.
  const std::vector<int32_t>& slots() const { return slots_; }
  // (len / page_size,) host pool pages, or empty when not on the host.
  const std::vector<int32_t>& host_pages() const { return host_pages_; }
  bool on_device() const { return !slots_.empty(); }
  bool on_host() const { return !host_pages_.empty(); }
  bool loading() const { return loading_; }
  // MatchPrefix hits (write_through_selective backs a node up at its 2nd).
  uint32_t hit_count() const { return hit_count_; }
  const RadixNode* parent() const { return parent_; }
  int32_t lock_ref() const { return lock_ref_; }
  uint64_t last_access() const { return last_access_; }
  size_t num_children() const { return children_.size(); }

 private:
  friend class RadixCache;
  friend class RadixCacheTestPeer;

  std::vector<int32_t> key_;    // (len,) token ids of the edge
  std::vector<int32_t> slots_;  // (len,) KV slot per token, or empty
  std::vector<int32_t> host_pages_;  // (len / page_size,) or empty
  bool loading_ = false;
  uint32_t hit_count_ = 0;
  // Keyed by the first page (page_size tokens) of the child's key.
  std::map<std::vector<int32_t>, std::unique_ptr<RadixNode>> children_;
  RadixNode* parent_ = nullptr;
  int32_t lock_ref_ = 0;
  int32_t direct_locks_ = 0;  // IncLockRef(this) calls not yet undone
  uint64_t last_access_ = 0;
};

struct RadixCacheOptions {
  int32_t page_size = 1;  // slots per KV page, >= 1
  bool disabled = false;  // --disable-radix-cache
};

class RadixCache {
 public:
  // Receives slots leaving the cache; returns them to the pool. With
  // page_size > 1 it always gets whole pages (length multiple of page_size).
  using FreeFn = std::function<void(std::span<const int32_t> slots)>;

  struct MatchResult {
    int64_t length = 0;              // matched tokens, a multiple of page_size
    std::vector<int32_t> slots;      // (length,) KV slots of the matched prefix
    RadixNode* last_node = nullptr;  // node ending at `length` (root if 0)
    // Tokens after `length` whose KV is on the host only (whole pages; not
    // counting nodes being loaded): what a load-back would add.
    int64_t host_length = 0;
    // The match stopped at a node whose KV is being loaded back.
    bool loading = false;
  };
  // What Evict does with a device leaf that has no host copy: `backup`
  // (write_back) may give it one (true: it has host_pages now); otherwise
  // the node goes, with its host-only subtree, whose host pages go to
  // `free_host`.
  struct EvictHooks {
    FreeFn free_device;                       // device slots leaving
    FreeFn free_host;                         // host pages leaving
    std::function<bool(RadixNode*)> backup;   // may be null
  };

  // page_size < 1 is clamped to 1.
  explicit RadixCache(RadixCacheOptions options = {});
  RadixCache(const RadixCache&) = delete;
  RadixCache& operator=(const RadixCache&) = delete;

  // Longest cached prefix of `tokens`, truncated to whole pages. Splits the
  // node where the match ends inside an edge, so last_node ends exactly at
  // `length`. Refreshes the last-access tick along the path and counts the
  // query in the hit statistics (unless record_stats is false: re-matches
  // of a running request's own tokens are not cache lookups).
  MatchResult MatchPrefix(std::span<const int32_t> tokens,
                          bool record_stats = true);

  // The host-only nodes continuing the device match of `tokens` (splitting
  // the last one where the match ends inside it), root to leaf; empty when
  // the match ends at a device node or a node being loaded. Does not count
  // statistics.
  std::vector<RadixNode*> MatchHost(std::span<const int32_t> tokens);
  // Gives host-only `node` (whose parent is on the device) the device
  // slots (len,) and marks it loading. The caller locks it until the load
  // is acknowledged, then calls SetLoading(node, false).
  Status SetDeviceSlots(RadixNode* node, std::vector<int32_t> slots);
  void SetLoading(RadixNode* node, bool loading);
  // Records the host copy of a node that has none (len / page_size pages).
  Status SetHostPages(RadixNode* node, std::vector<int32_t> pages);
  int64_t loading_nodes() const { return loading_nodes_; }
  // A failed transfer: forget the copy it was making. DropHostCopy on a
  // host-only node removes it with its subtree; DropDeviceCopy needs an
  // unlocked node with no child on the device and a host copy.
  // FailedPrecondition (no change) otherwise.
  Status DropHostCopy(RadixNode* node, const FreeFn& free_host);
  Status DropDeviceCopy(RadixNode* node, const FreeFn& free_device);

  // Length of the longest cached prefix of `tokens` (whole pages), without
  // splitting, touching or counting anything: what the longest-prefix-match
  // scheduling policy sorts the waiting queue by. O(matched length).
  int64_t PrefixLength(std::span<const int32_t> tokens) const;

  // Caches `tokens` with their `slots` (same length), e.g. prompt plus
  // generated tokens of a finished request or a prefill chunk. Only the
  // page-aligned prefix aligned = n - n % page_size is cached. Returns the
  // length p (a multiple of page_size) that was already cached: the cache
  // takes ownership of slots[p, aligned); the caller keeps slots[0, p) (the
  // duplicates; free them or swap in the cached ones) and slots[aligned, n).
  // InvalidArgument when lengths differ or a page's slots are not contiguous
  // (then nothing changes). Disabled: takes nothing and returns n.
  // Host-only nodes on the path adopt their part of `slots` (so the
  // returned p is where the device copy ends). `path`, when given, receives
  // every node of the inserted prefix, root side first.
  StatusOr<int64_t> Insert(std::span<const int32_t> tokens,
                           std::span<const int32_t> slots,
                           std::vector<RadixNode*>* path = nullptr);

  // Storage tier: adds pages [first_page, n) of `tokens` (n whole pages;
  // pages before first_page must be in the tree, on any tier) as host-only
  // KV in `host_pages` (one per page). Pages the tree already holds keep
  // their copy. Returns the index into host_pages from which the tree took
  // them (the caller frees host_pages[0, index)); host_pages.size() when it
  // took none (e.g. the tree no longer reaches first_page).
  int64_t InsertHost(std::span<const int32_t> tokens, int64_t first_page,
                     std::span<const int32_t> host_pages);

  // Locks `node` and its ancestors against eviction (root: no-op).
  void IncLockRef(RadixNode* node);
  // Undoes one IncLockRef(node). FailedPrecondition (and no change) when
  // `node` holds no lock of its own.
  Status DecLockRef(RadixNode* node);

  // Frees up to `num_tokens` (at least, when enough is evictable) by removing
  // unlocked leaves, least recently used first; a parent left childless and
  // unlocked becomes a candidate in turn. Returns the tokens freed.
  // With the host tier (hooks): a leaf on the host too is demoted (device
  // slots freed, node kept); see EvictHooks for one that is not.
  int64_t Evict(int64_t num_tokens, const FreeFn& free_fn);
  int64_t Evict(int64_t num_tokens, const EvictHooks& hooks);
  // Frees up to `num_pages` host pages (at least, when enough can go) by
  // removing unlocked host-only leaves, least recently used first. Returns
  // the host pages freed.
  int64_t EvictHost(int64_t num_pages, const FreeFn& free_host);
  // flush_cache?tier=host: drops every host copy (host-only nodes go with
  // their subtrees). FailedPrecondition while a node is loading.
  Status ResetHost(const FreeFn& free_host);

  // flush_cache: drops every node, handing all slots to `free_fn` (when
  // set), and clears the statistics. FailedPrecondition (and no change)
  // while any node is locked, i.e. while requests still run.
  Status Reset(const FreeFn& free_fn = nullptr,
               const FreeFn& free_host = nullptr);

  int32_t page_size() const { return options_.page_size; }
  bool disabled() const { return options_.disabled; }
  int64_t evictable_size() const { return evictable_size_; }
  int64_t protected_size() const { return protected_size_; }
  int64_t total_size() const { return evictable_size_ + protected_size_; }
  int64_t host_size() const { return host_size_; }  // tokens on the host
  int64_t num_nodes() const { return num_nodes_; }  // excluding the root
  const RadixNode* root() const { return root_.get(); }

  // Hit statistics since construction or Reset: every token passed to
  // MatchPrefix counts as queried (an unaligned tail too, so with
  // page_size > 1 the rate stays below 1), matched tokens as matched.
  int64_t tokens_queried() const { return tokens_queried_; }
  int64_t tokens_matched() const { return tokens_matched_; }
  double hit_rate() const {
    return tokens_queried_ == 0 ? 0.0
                                : static_cast<double>(tokens_matched_) /
                                      static_cast<double>(tokens_queried_);
  }

  // Internal error describing the first broken invariant, or OK.
  Status CheckIntegrity() const;

 private:
  friend class RadixCacheTestPeer;

  std::vector<int32_t> PageKey(std::span<const int32_t> tokens) const;
  // Common prefix length of `key` and `tokens`, rounded down to a page.
  size_t MatchLength(const std::vector<int32_t>& key,
                     std::span<const int32_t> tokens) const;
  // Splits `node` after `length` tokens; returns the new upper node.
  RadixNode* Split(RadixNode* node, size_t length);
  void Touch(RadixNode* node) { node->last_access_ = ++clock_; }
  // Removes `node` and its subtree (none of it locked or on the device
  // except `node` itself), handing slots and host pages to the hooks.
  void RemoveSubtree(RadixNode* node, const FreeFn& free_device,
                     const FreeFn& free_host);
  // Adds/removes `node`'s tokens to/from the device counters.
  void CountDevice(const RadixNode* node, int64_t sign);

  RadixCacheOptions options_;
  std::unique_ptr<RadixNode> root_;
  int64_t evictable_size_ = 0;
  int64_t protected_size_ = 0;
  int64_t host_size_ = 0;
  int64_t loading_nodes_ = 0;
  int64_t num_nodes_ = 0;
  uint64_t clock_ = 0;
  int64_t tokens_queried_ = 0;
  int64_t tokens_matched_ = 0;
};

}  // namespace tessera::kv

#endif  // TESSERA_KV_RADIX_CACHE_H_
