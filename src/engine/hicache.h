// HiCache: the hierarchical KV cache's controller — where the pages of the
// radix tree go when the device pool fills (SGLang's HiCache, L1 device ->
// L2 host), and how they come back.
//
// It owns the host pool and the transfer engine and applies the policies
// on the radix tree the KvCacheManager shares with it:
//   write policy (--hicache-write-policy), when a device node gets its host
//   copy:
//     write_through            as soon as it is cached (after a prefill
//                              chunk or at release);
//     write_through_selective  at its second prefix hit;
//     write_back               when it is evicted from the device (the
//                              eviction waits for that copy);
//   backup: a node being copied to the host is locked (its device pages
//   stay) until the backup thread acknowledges the job;
//   demotion: device eviction keeps a node with a host copy in the tree,
//   host-only (radix_cache.h);
//   load-back: StartLoad gives the host-only continuation of a prompt
//   fresh device pages, queues the copy and keeps those nodes locked and
//   out of matches until it is acknowledged; the scheduler defers the
//   request meanwhile (other batches keep running) and admits it after,
//   matching the whole prefix on the device;
//   host eviction: host pages are reclaimed from unlocked host-only leaves,
//   least recently used first; when none can go, the backup is skipped.
//   storage tier (L3, --hicache-storage-backend file|redis): every page
//   that gets a host copy is also written to storage (a copy of its bytes
//   goes to the storage thread), keyed by the hash chain of its prefix
//   (page_object.h); StartLoad asks storage for the pages of a prompt past
//   what the device and host hold (a prefetch on the storage thread), puts
//   what comes back, verified, into host pages and host-only nodes, and
//   then loads it like any host hit. --hicache-storage-prefetch-policy:
//   best_effort (the request does not wait for the prefetch),
//   wait_complete (it waits until the prefetch is done) or timeout (it
//   waits up to --hicache-storage-prefetch-timeout seconds). A prompt is
//   prefetched at most once per kPrefetchMemory seconds.
// A failed transfer drops the copy it was making (the KV is recomputed on a
// later miss), logs a warning and counts in transfer_failures: wrong
// tokens are never served from a half-copied page.
//
// Thread-safety: scheduler thread only (KvTransfer's threads are internal).
#ifndef TESSERA_ENGINE_HICACHE_H_
#define TESSERA_ENGINE_HICACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "kv/host_kv_pool.h"
#include "kv/kv_pool.h"
#include "kv/kv_transfer.h"
#include "kv/radix_cache.h"
#include "kv/storage_worker.h"
#include "runtime/device.h"

namespace tessera::engine {

enum class WritePolicy { kWriteThrough, kWriteThroughSelective, kWriteBack };
StatusOr<WritePolicy> ParseWritePolicy(std::string_view name);
const char* WritePolicyName(WritePolicy policy);

enum class PrefetchPolicy { kBestEffort, kWaitComplete, kTimeout };
StatusOr<PrefetchPolicy> ParsePrefetchPolicy(std::string_view name);
const char* PrefetchPolicyName(PrefetchPolicy policy);

// The serve flags of the host tier.
struct HiCacheOptions {
  bool enabled = false;     // --enable-hierarchical-cache
  double ratio = 2.0;       // --hicache-ratio: host pages / device pages
  double size_gb = 0;       // --hicache-size (GB; > 0 overrides the ratio)
  kv::HostLayout layout = kv::HostLayout::kPageFirst;
  WritePolicy write_policy = WritePolicy::kWriteThrough;
  // Storage tier: storage.backend empty = none.
  kv::KvStorageOptions storage;
  PrefetchPolicy prefetch_policy = PrefetchPolicy::kBestEffort;
  double prefetch_timeout_s = 1.0;
  // What identifies the weights (config text, weight sizes, dtypes): part
  // of every storage key, so servers of other models never share pages.
  std::string model_identity;
};

struct HiCacheStats {
  int64_t host_capacity_tokens = 0;
  int64_t host_cached_tokens = 0;    // tokens with a host copy
  int64_t host_hit_tokens = 0;       // tokens loaded back instead of recomputed
  int64_t backup_pages = 0;
  uint64_t backup_bytes = 0;
  double backup_seconds = 0;         // summed job latency
  int64_t load_pages = 0;
  uint64_t load_bytes = 0;
  double load_seconds = 0;
  int64_t transfer_failures = 0;
  // Storage tier (all zero without one).
  bool storage_enabled = false;
  int64_t storage_hit_tokens = 0;   // prefetched into the host tier
  int64_t storage_objects = 0;      // -1: the backend does not say
  kv::StorageTotals storage;
};

class HiCache {
 public:
  // The host pool is ratio x the device pool's pages (or size_gb of host
  // memory). InvalidArgument for a ratio <= 0 or a size holding no page.
  static StatusOr<std::unique_ptr<HiCache>> Create(runtime::Device& device,
                                                   kv::KvPool& device_pool,
                                                   kv::RadixCache& cache,
                                                   const HiCacheOptions& options);
  ~HiCache();
  HiCache(const HiCache&) = delete;
  HiCache& operator=(const HiCache&) = delete;

  // After Insert: the nodes of the inserted path (root side first) that
  // the write policy backs up now.
  void OnInserted(std::span<kv::RadixNode* const> path);
  // After a match ending at `last` (write_through_selective counts hits).
  void OnMatched(kv::RadixNode* last);
  // If the cache holds more of `tokens` on the host than on the device,
  // starts loading it back (evicting device leaves for room); true while
  // a load for this prefix is in flight, i.e. the request should wait.
  bool StartLoad(std::span<const int32_t> tokens);
  // Applies the transfer acks that arrived (unlocks, finishes loads).
  void Poll();
  // Waits for every load in flight and applies the acks (before an Insert
  // that could cross a loading node).
  void FinishLoads();
  // Waits for every transfer and applies the acks.
  void Drain();
  // Waits until the storage thread is idle (writes stored, prefetches
  // applied); tests and shutdown-free flushes use it.
  void DrainStorage();

  // Device eviction with demotion (write_back backs up first).
  kv::RadixCache::EvictHooks EvictHooks();
  // flush_cache?tier=host (nothing may be loading: Drain first).
  Status FlushHost();
  // flush_cache?tier=storage; FailedPrecondition without a storage tier.
  Status FlushStorage();
  bool has_storage() const { return storage_ != nullptr; }
  void FreeHostPages(std::span<const int32_t> pages);

  HiCacheStats Stats() const;
  const HiCacheOptions& options() const { return options_; }
  kv::HostKvPool& host_pool() const { return *host_; }
  // Host pool invariants, and host pages in use == pages in the tree.
  Status CheckIntegrity() const;

 private:
  struct Pending {
    kv::TransferDirection direction;
    std::vector<kv::RadixNode*> nodes;  // locked by the job (last: loads)
    // Backups: each node's key length when the job was submitted. A node
    // split meanwhile (an insert or match through it) keeps only its deeper
    // part; the parts above it, up to this length, were copied by the same
    // job (SplitParts).
    std::vector<size_t> key_lengths;
  };
  // `node` and the ancestors split off it since its key was `length`
  // tokens long, root side first: the nodes holding those tokens now.
  static std::vector<kv::RadixNode*> SplitParts(kv::RadixNode* node,
                                                size_t length);

  HiCache(kv::KvPool& device_pool, kv::RadixCache& cache,
          const HiCacheOptions& options)
      : options_(options), device_pool_(device_pool), cache_(cache) {}
  // Host pages for `node` (evicting host-only leaves when short); false
  // when the host pool cannot hold it.
  bool GiveHostPages(kv::RadixNode* node, std::vector<kv::PageCopy>& copies);
  void FreeDeviceSlots(std::span<const int32_t> slots);
  void Apply(const kv::TransferDone& done);
  // write_back: copies `node` to the host before it leaves the device.
  bool BackupNow(kv::RadixNode* node);
  // Storage tier: queues the host pages of `node` (just backed up).
  void WriteToStorage(const kv::RadixNode* node);
  // Storage tier: starts or follows the prefetch of `tokens`' pages past
  // the tree's `tree_pages`; true when the request should wait for it.
  bool Prefetch(std::span<const int32_t> tokens, int64_t tree_pages);
  // Storage tier: puts a finished prefetch's pages into the host tier.
  void ApplyPrefetch(const kv::PrefetchResult& result);

  struct PrefetchState {
    uint64_t id = 0;
    std::vector<int32_t> tokens;  // the prompt's whole pages
    int64_t first_page = 0;
    uint64_t started_ns = 0;
    bool done = false;
  };

  const HiCacheOptions options_;
  kv::KvPool& device_pool_;
  kv::RadixCache& cache_;
  std::unique_ptr<kv::HostKvPool> host_;
  std::unique_ptr<kv::KvTransfer> transfer_;
  // Jobs not yet acknowledged, by (direction, id).
  std::map<std::pair<int, uint64_t>, Pending> pending_;
  int64_t host_hit_tokens_ = 0;
  int64_t transfer_failures_ = 0;
  std::unique_ptr<kv::StorageWorker> storage_;  // null without L3
  uint64_t identity_ = 0;
  // Prefetches by the key of the prompt's last page, and that key by id.
  std::map<kv::PageKey, PrefetchState> prefetches_;
  std::map<uint64_t, kv::PageKey> prefetch_ids_;
  int64_t storage_hit_tokens_ = 0;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_HICACHE_H_
