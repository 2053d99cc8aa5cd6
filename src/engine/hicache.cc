#include "engine/hicache.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/logging.h"
#include "base/monotonic_clock.h"

namespace tessera::engine {
namespace {

constexpr int kBackup = static_cast<int>(kv::TransferDirection::kBackup);
constexpr int kLoad = static_cast<int>(kv::TransferDirection::kLoad);
// write_through_selective backs a node up at this many prefix hits.
constexpr uint32_t kSelectiveHits = 2;
// A prompt is prefetched from storage at most once per this many seconds.
constexpr double kPrefetchMemory = 10.0;
// How long shutdown waits for queued storage writes.
constexpr double kStorageDrainSeconds = 5.0;

}  // namespace

StatusOr<WritePolicy> ParseWritePolicy(std::string_view name) {
  if (name == "write_through") return WritePolicy::kWriteThrough;
  if (name == "write_through_selective") {
    return WritePolicy::kWriteThroughSelective;
  }
  if (name == "write_back") return WritePolicy::kWriteBack;
  return InvalidArgumentError(fmt::format(
      "unknown --hicache-write-policy '{}'; use write_through, "
      "write_through_selective or write_back",
      name));
}

const char* WritePolicyName(WritePolicy policy) {
  switch (policy) {
    case WritePolicy::kWriteThrough: return "write_through";
    case WritePolicy::kWriteThroughSelective: return "write_through_selective";
    case WritePolicy::kWriteBack: return "write_back";
  }
  return "?";
}

StatusOr<PrefetchPolicy> ParsePrefetchPolicy(std::string_view name) {
  if (name == "best_effort") return PrefetchPolicy::kBestEffort;
  if (name == "wait_complete") return PrefetchPolicy::kWaitComplete;
  if (name == "timeout") return PrefetchPolicy::kTimeout;
  return InvalidArgumentError(fmt::format(
      "unknown --hicache-storage-prefetch-policy '{}'; use best_effort, "
      "wait_complete or timeout",
      name));
}

const char* PrefetchPolicyName(PrefetchPolicy policy) {
  switch (policy) {
    case PrefetchPolicy::kBestEffort: return "best_effort";
    case PrefetchPolicy::kWaitComplete: return "wait_complete";
    case PrefetchPolicy::kTimeout: return "timeout";
  }
  return "?";
}

StatusOr<std::unique_ptr<HiCache>> HiCache::Create(
    runtime::Device& device, kv::KvPool& device_pool, kv::RadixCache& cache,
    const HiCacheOptions& options) {
  if (cache.disabled()) {
    return InvalidArgumentError(
        "--enable-hierarchical-cache needs the radix cache; drop "
        "--disable-radix-cache");
  }
  const uint64_t page_bytes = kv::KvPool::BytesPerPage(device_pool.options());
  int64_t pages = 0;
  if (options.size_gb > 0) {
    pages = static_cast<int64_t>(options.size_gb * 1e9 /
                                 static_cast<double>(page_bytes));
  } else {
    if (!(options.ratio > 0)) {
      return InvalidArgumentError(fmt::format(
          "--hicache-ratio {} must be positive (host pages per device page)",
          options.ratio));
    }
    pages = static_cast<int64_t>(
        std::floor(options.ratio * static_cast<double>(device_pool.num_pages())));
  }
  if (pages < 1) {
    return InvalidArgumentError(fmt::format(
        "the host KV tier would hold no page (one page costs {} bytes); "
        "raise --hicache-ratio or --hicache-size",
        page_bytes));
  }
  std::unique_ptr<HiCache> hc(new HiCache(device_pool, cache, options));
  TSR_ASSIGN_OR_RETURN(hc->host_, kv::HostKvPool::Create(
                                      device, device_pool, pages, options.layout));
  TSR_ASSIGN_OR_RETURN(hc->transfer_,
                       kv::KvTransfer::Create(device, device_pool, *hc->host_));
  if (!options.storage.backend.empty()) {
    const kv::KvPoolOptions& g = device_pool.options();
    hc->identity_ = kv::ModelIdentity(options.model_identity, g.num_layers,
                                      g.num_kv_heads, g.head_dim,
                                      static_cast<int>(g.dtype), g.page_size);
    TSR_ASSIGN_OR_RETURN(std::unique_ptr<kv::KvStorage> backend,
                         kv::OpenKvStorage(options.storage));
    hc->storage_ = std::make_unique<kv::StorageWorker>(
        std::move(backend), hc->identity_, g.page_size, page_bytes);
    TSR_LOG_INFO("hierarchical cache: storage tier {} ({}), prefetch {}",
                 options.storage.backend,
                 options.storage.backend == "file" ? options.storage.dir
                                                   : options.storage.redis_url,
                 PrefetchPolicyName(options.prefetch_policy));
  }
  TSR_LOG_INFO(
      "hierarchical cache: host tier of {} pages ({} tokens, {:.1f} MiB, {}, "
      "{}), {}",
      pages, pages * device_pool.page_size(),
      static_cast<double>(hc->host_->total_bytes()) / (1 << 20),
      hc->host_->pinned() ? "pinned" : "heap",
      kv::HostLayoutName(options.layout), WritePolicyName(options.write_policy));
  return hc;
}

HiCache::~HiCache() {
  // Finish the transfers and apply them (a backup's ack queues its storage
  // write), before the pools go. Queued storage writes then get a few
  // seconds (a restarted server finds them); what is left is dropped:
  // storage is a cache. The tree (the scheduler's) outlives this object.
  Drain();
  transfer_.reset();
  if (storage_ != nullptr && !storage_->WaitIdleFor(kStorageDrainSeconds)) {
    TSR_LOG_WARN("KV storage tier: writes still queued after {} s at "
                 "shutdown were dropped",
                 kStorageDrainSeconds);
  }
  storage_.reset();
}

void HiCache::WriteToStorage(const kv::RadixNode* node) {
  if (storage_ == nullptr || !node->on_host()) return;
  // The node's pages are keyed by the chain over the whole path to it.
  std::vector<const kv::RadixNode*> path;
  for (const kv::RadixNode* n = node; n != nullptr && n != cache_.root();
       n = n->parent()) {
    path.push_back(n);
  }
  std::vector<int32_t> tokens;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    tokens.insert(tokens.end(), (*it)->key().begin(), (*it)->key().end());
  }
  const int32_t ps = device_pool_.page_size();
  const int64_t pages = static_cast<int64_t>(node->host_pages().size());
  const int64_t first = static_cast<int64_t>(tokens.size()) / ps - pages;
  std::vector<kv::PageKey> keys =
      kv::ChainKeys(identity_, tokens, ps, first, pages);
  std::vector<std::vector<uint8_t>> payloads;
  for (int32_t page : node->host_pages()) {
    payloads.emplace_back(host_->page_bytes());
    host_->ReadPage(page, payloads.back());
  }
  storage_->Write(std::move(keys), std::move(payloads));
}

bool HiCache::Prefetch(std::span<const int32_t> tokens, int64_t tree_pages) {
  const int32_t ps = device_pool_.page_size();
  const int64_t total = static_cast<int64_t>(tokens.size()) / ps;
  if (tree_pages >= total) return false;
  std::vector<kv::PageKey> keys =
      kv::ChainKeys(identity_, tokens, ps, tree_pages, total - tree_pages);
  const kv::PageKey last = keys.back();
  auto it = prefetches_.find(last);
  if (it == prefetches_.end()) {
    PrefetchState st;
    st.tokens.assign(tokens.begin(), tokens.begin() + total * ps);
    st.first_page = tree_pages;
    st.started_ns = MonotonicNs();
    st.id = storage_->Prefetch(std::move(keys));
    prefetch_ids_[st.id] = last;
    it = prefetches_.emplace(last, std::move(st)).first;
  }
  if (it->second.done) return false;
  switch (options_.prefetch_policy) {
    case PrefetchPolicy::kBestEffort:
      return false;
    case PrefetchPolicy::kWaitComplete:
      return true;
    case PrefetchPolicy::kTimeout:
      return static_cast<double>(MonotonicNs() - it->second.started_ns) * 1e-9 <
             options_.prefetch_timeout_s;
  }
  return false;
}

void HiCache::ApplyPrefetch(const kv::PrefetchResult& result) {
  auto id = prefetch_ids_.find(result.id);
  if (id == prefetch_ids_.end()) return;
  auto it = prefetches_.find(id->second);
  prefetch_ids_.erase(id);
  if (it == prefetches_.end()) return;
  PrefetchState& st = it->second;
  st.done = true;
  const int64_t n = static_cast<int64_t>(result.payloads.size());
  if (n == 0) return;
  if (host_->num_free_pages() < n) {
    cache_.EvictHost(n - host_->num_free_pages(),
                     [this](std::span<const int32_t> p) { FreeHostPages(p); });
  }
  std::vector<int32_t> pages;
  const int64_t take = std::min(n, host_->num_free_pages());
  if (take == 0 || !host_->AllocatePages(take, pages).ok()) return;
  for (int64_t i = 0; i < take; ++i) host_->WritePage(pages[i], result.payloads[i]);
  const int32_t ps = device_pool_.page_size();
  const int64_t from = cache_.InsertHost(
      std::span<const int32_t>(st.tokens).first((st.first_page + take) * ps),
      st.first_page, pages);
  if (from > 0) FreeHostPages(std::span<const int32_t>(pages).first(from));
  storage_hit_tokens_ += (take - from) * ps;
}

Status HiCache::FlushStorage() {
  if (storage_ == nullptr) {
    return InvalidArgumentError(
        "this server has no storage tier; start it with "
        "--hicache-storage-backend file|redis");
  }
  // A backup still in flight writes its pages to storage when it completes
  // (Apply); settle those first, or they land after the clear.
  Drain();
  storage_->WaitIdle();
  for (const kv::PrefetchResult& r : storage_->PollPrefetched()) ApplyPrefetch(r);
  prefetches_.clear();
  prefetch_ids_.clear();
  return storage_->Clear();
}

void HiCache::FreeDeviceSlots(std::span<const int32_t> slots) {
  const int32_t ps = device_pool_.page_size();
  std::vector<int32_t> pages;
  for (size_t i = 0; i < slots.size(); i += ps) pages.push_back(slots[i] / ps);
  (void)device_pool_.FreePages(pages);
}

void HiCache::FreeHostPages(std::span<const int32_t> pages) {
  (void)host_->FreePages(pages);
}

bool HiCache::GiveHostPages(kv::RadixNode* node,
                            std::vector<kv::PageCopy>& copies) {
  const int32_t ps = device_pool_.page_size();
  const int64_t need = static_cast<int64_t>(node->key().size()) / ps;
  if (host_->num_free_pages() < need) {
    cache_.EvictHost(need - host_->num_free_pages(),
                     [this](std::span<const int32_t> p) { FreeHostPages(p); });
  }
  std::vector<int32_t> pages;
  if (!host_->AllocatePages(need, pages).ok()) return false;
  if (!cache_.SetHostPages(node, pages).ok()) {
    FreeHostPages(pages);
    return false;
  }
  for (int64_t i = 0; i < need; ++i) {
    copies.push_back({node->slots()[i * ps] / ps, pages[i]});
  }
  return true;
}

void HiCache::OnInserted(std::span<kv::RadixNode* const> path) {
  std::vector<kv::PageCopy> copies;
  std::vector<kv::RadixNode*> nodes;
  std::vector<size_t> key_lengths;
  for (kv::RadixNode* n : path) {
    if (!n->on_device() || n->on_host() || n->loading()) continue;
    const bool now =
        options_.write_policy == WritePolicy::kWriteThrough ||
        (options_.write_policy == WritePolicy::kWriteThroughSelective &&
         n->hit_count() >= kSelectiveHits);
    if (!now || !GiveHostPages(n, copies)) continue;
    cache_.IncLockRef(n);
    nodes.push_back(n);
    key_lengths.push_back(n->key().size());
  }
  if (nodes.empty()) return;
  const uint64_t id =
      transfer_->Submit(kv::TransferDirection::kBackup, std::move(copies));
  pending_[{kBackup, id}] =
      Pending{kv::TransferDirection::kBackup, nodes, std::move(key_lengths)};
}

std::vector<kv::RadixNode*> HiCache::SplitParts(kv::RadixNode* node,
                                                size_t length) {
  std::vector<kv::RadixNode*> parts;
  size_t covered = 0;
  for (kv::RadixNode* n = node; n != nullptr && covered < length;
       n = const_cast<kv::RadixNode*>(n->parent())) {
    parts.push_back(n);
    covered += n->key().size();
  }
  std::reverse(parts.begin(), parts.end());  // storage gets prefixes first
  return parts;
}

void HiCache::OnMatched(kv::RadixNode* last) {
  if (options_.write_policy != WritePolicy::kWriteThroughSelective) return;
  std::vector<kv::RadixNode*> path;
  for (kv::RadixNode* n = last; n != nullptr && n != cache_.root();
       n = const_cast<kv::RadixNode*>(n->parent())) {
    path.push_back(n);
  }
  std::reverse(path.begin(), path.end());
  OnInserted(path);
}

bool HiCache::StartLoad(std::span<const int32_t> tokens) {
  kv::RadixCache::MatchResult m =
      cache_.MatchPrefix(tokens, /*record_stats=*/false);
  if (m.loading) return true;
  const int32_t ps = device_pool_.page_size();
  if (storage_ != nullptr &&
      Prefetch(tokens, (m.length + m.host_length) / ps)) {
    return true;
  }
  if (m.host_length == 0) return false;
  // The device part of the path must stay while room is made.
  cache_.IncLockRef(m.last_node);
  const int64_t need = m.host_length / ps;
  if (device_pool_.num_free_pages() < need) {
    cache_.Evict((need - device_pool_.num_free_pages()) * ps, EvictHooks());
  }
  bool started = false;
  if (device_pool_.num_free_pages() >= need) {
    std::vector<kv::RadixNode*> nodes;
    std::vector<kv::PageCopy> copies;
    for (kv::RadixNode* n : cache_.MatchHost(tokens)) {
      std::vector<int32_t> pages;
      if (!device_pool_.AllocatePages(
               static_cast<int64_t>(n->key().size()) / ps, pages).ok()) {
        break;  // not expected: the room was made above
      }
      nodes.push_back(n);
      std::vector<int32_t> slots;
      for (size_t i = 0; i < pages.size(); ++i) {
        for (int32_t j = 0; j < ps; ++j) slots.push_back(pages[i] * ps + j);
        copies.push_back({pages[i], n->host_pages()[i]});
      }
      (void)cache_.SetDeviceSlots(n, std::move(slots));
      cache_.IncLockRef(n);
    }
    if (!nodes.empty()) {
      host_hit_tokens_ += static_cast<int64_t>(copies.size()) * ps;
      const uint64_t id =
          transfer_->Submit(kv::TransferDirection::kLoad, std::move(copies));
      pending_[{kLoad, id}] = Pending{kv::TransferDirection::kLoad, nodes, {}};
      started = true;
    }
  }
  (void)cache_.DecLockRef(m.last_node);
  return started;
}

void HiCache::Apply(const kv::TransferDone& done) {
  auto it = pending_.find({static_cast<int>(done.direction), done.id});
  if (it == pending_.end()) return;  // a write_back copy (BackupNow)
  Pending p = std::move(it->second);
  pending_.erase(it);
  for (kv::RadixNode* n : p.nodes) {
    if (p.direction == kv::TransferDirection::kLoad) cache_.SetLoading(n, false);
    (void)cache_.DecLockRef(n);
  }
  // A backed-up node may have been split since: its parts above it hold
  // host pages this job filled.
  std::vector<kv::RadixNode*> backed_up;
  if (p.direction == kv::TransferDirection::kBackup) {
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      for (kv::RadixNode* part : SplitParts(p.nodes[i], p.key_lengths[i])) {
        backed_up.push_back(part);
      }
    }
  }
  if (done.status.ok()) {
    for (const kv::RadixNode* n : backed_up) WriteToStorage(n);
    return;
  }
  ++transfer_failures_;
  TSR_LOG_WARN("KV {} failed ({}); dropping the copy, the prefix will be "
               "recomputed",
               p.direction == kv::TransferDirection::kLoad ? "load-back"
                                                           : "backup to host",
               done.status.ToString());
  if (p.direction == kv::TransferDirection::kBackup) {
    for (kv::RadixNode* n : backed_up) {
      (void)cache_.DropHostCopy(
          n, [this](std::span<const int32_t> pages) { FreeHostPages(pages); });
    }
  } else {
    for (auto n = p.nodes.rbegin(); n != p.nodes.rend(); ++n) {
      (void)cache_.DropDeviceCopy(
          *n, [this](std::span<const int32_t> s) { FreeDeviceSlots(s); });
    }
  }
}

void HiCache::Poll() {
  for (const kv::TransferDone& done : transfer_->PollDone()) Apply(done);
  if (storage_ == nullptr) return;
  for (const kv::PrefetchResult& r : storage_->PollPrefetched()) {
    ApplyPrefetch(r);
  }
  const uint64_t now = MonotonicNs();
  for (auto it = prefetches_.begin(); it != prefetches_.end();) {
    const bool expired =
        it->second.done &&
        static_cast<double>(now - it->second.started_ns) * 1e-9 > kPrefetchMemory;
    it = expired ? prefetches_.erase(it) : std::next(it);
  }
}

void HiCache::FinishLoads() {
  transfer_->WaitIdle(kv::TransferDirection::kLoad);
  Poll();
}

void HiCache::Drain() {
  transfer_->WaitIdle(kv::TransferDirection::kBackup);
  transfer_->WaitIdle(kv::TransferDirection::kLoad);
  Poll();
}

void HiCache::DrainStorage() {
  if (storage_ == nullptr) return;
  storage_->WaitIdle();
  Poll();
}

bool HiCache::BackupNow(kv::RadixNode* node) {
  std::vector<kv::PageCopy> copies;
  if (!GiveHostPages(node, copies)) return false;
  const uint64_t id =
      transfer_->Submit(kv::TransferDirection::kBackup, std::move(copies));
  transfer_->WaitIdle(kv::TransferDirection::kBackup);
  bool ok = true;
  for (const kv::TransferDone& d : transfer_->PollDone()) {
    if (d.direction == kv::TransferDirection::kBackup && d.id == id) {
      ok = d.status.ok();
    } else {
      Apply(d);
    }
  }
  if (!ok) {
    ++transfer_failures_;
    (void)cache_.DropHostCopy(
        node, [this](std::span<const int32_t> p) { FreeHostPages(p); });
    return false;
  }
  WriteToStorage(node);
  return true;
}

kv::RadixCache::EvictHooks HiCache::EvictHooks() {
  kv::RadixCache::EvictHooks hooks;
  hooks.free_device = [this](std::span<const int32_t> s) { FreeDeviceSlots(s); };
  hooks.free_host = [this](std::span<const int32_t> p) { FreeHostPages(p); };
  if (options_.write_policy == WritePolicy::kWriteBack) {
    hooks.backup = [this](kv::RadixNode* n) { return BackupNow(n); };
  }
  return hooks;
}

Status HiCache::FlushHost() {
  Drain();
  return cache_.ResetHost(
      [this](std::span<const int32_t> p) { FreeHostPages(p); });
}

HiCacheStats HiCache::Stats() const {
  HiCacheStats s;
  s.host_capacity_tokens = host_->num_pages() * host_->page_size();
  s.host_cached_tokens = cache_.host_size();
  s.host_hit_tokens = host_hit_tokens_;
  const kv::TransferTotals b = transfer_->Totals(kv::TransferDirection::kBackup);
  const kv::TransferTotals l = transfer_->Totals(kv::TransferDirection::kLoad);
  s.backup_pages = static_cast<int64_t>(b.pages);
  s.backup_bytes = b.bytes;
  s.backup_seconds = b.seconds;
  s.load_pages = static_cast<int64_t>(l.pages);
  s.load_bytes = l.bytes;
  s.load_seconds = l.seconds;
  s.transfer_failures = transfer_failures_;
  if (storage_ != nullptr) {
    s.storage_enabled = true;
    s.storage_hit_tokens = storage_hit_tokens_;
    s.storage_objects = storage_->backend().objects();
    s.storage = storage_->Totals();
  }
  return s;
}

Status HiCache::CheckIntegrity() const {
  TSR_RETURN_IF_ERROR(host_->CheckIntegrity());
  if (host_->num_used_pages() * host_->page_size() != cache_.host_size()) {
    return InternalError(fmt::format(
        "host KV pool has {} pages in use but the radix tree holds {} host "
        "tokens ({} pages)",
        host_->num_used_pages(), cache_.host_size(),
        cache_.host_size() / host_->page_size()));
  }
  return OkStatus();
}

}  // namespace tessera::engine
