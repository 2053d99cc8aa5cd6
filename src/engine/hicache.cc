#include "engine/hicache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/logging.h"

namespace tessera::engine {
namespace {

constexpr int kBackup = static_cast<int>(kv::TransferDirection::kBackup);
constexpr int kLoad = static_cast<int>(kv::TransferDirection::kLoad);
// write_through_selective backs a node up at this many prefix hits.
constexpr uint32_t kSelectiveHits = 2;

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
  // The transfer threads finish their jobs before the pools go.
  transfer_.reset();
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
  for (kv::RadixNode* n : path) {
    if (!n->on_device() || n->on_host() || n->loading()) continue;
    const bool now =
        options_.write_policy == WritePolicy::kWriteThrough ||
        (options_.write_policy == WritePolicy::kWriteThroughSelective &&
         n->hit_count() >= kSelectiveHits);
    if (!now || !GiveHostPages(n, copies)) continue;
    cache_.IncLockRef(n);
    nodes.push_back(n);
  }
  if (nodes.empty()) return;
  const uint64_t id =
      transfer_->Submit(kv::TransferDirection::kBackup, std::move(copies));
  pending_[{kBackup, id}] = Pending{kv::TransferDirection::kBackup, nodes};
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
  if (m.host_length == 0) return false;
  const int32_t ps = device_pool_.page_size();
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
      pending_[{kLoad, id}] = Pending{kv::TransferDirection::kLoad, nodes};
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
  if (done.status.ok()) return;
  ++transfer_failures_;
  TSR_LOG_WARN("KV {} failed ({}); dropping the copy, the prefix will be "
               "recomputed",
               p.direction == kv::TransferDirection::kLoad ? "load-back"
                                                           : "backup to host",
               done.status.ToString());
  if (p.direction == kv::TransferDirection::kBackup) {
    for (kv::RadixNode* n : p.nodes) {
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
  }
  return ok;
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
