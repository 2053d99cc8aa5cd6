#include "kv/radix_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <queue>
#include <unordered_set>
#include <utility>

namespace tessera::kv {

RadixCache::RadixCache(RadixCacheOptions options)
    : options_(options), root_(std::make_unique<RadixNode>()) {
  if (options_.page_size < 1) options_.page_size = 1;
}

std::vector<int32_t> RadixCache::PageKey(
    std::span<const int32_t> tokens) const {
  size_t n = std::min(tokens.size(), static_cast<size_t>(page_size()));
  return std::vector<int32_t>(tokens.begin(), tokens.begin() + n);
}

size_t RadixCache::MatchLength(const std::vector<int32_t>& key,
                               std::span<const int32_t> tokens) const {
  size_t n = std::min(key.size(), tokens.size());
  size_t i = 0;
  while (i < n && key[i] == tokens[i]) ++i;
  return i - i % static_cast<size_t>(page_size());
}

RadixNode* RadixCache::Split(RadixNode* node, size_t length) {
  RadixNode* parent = node->parent_;
  auto upper = std::make_unique<RadixNode>();
  upper->key_.assign(node->key_.begin(), node->key_.begin() + length);
  if (node->on_device()) {
    upper->slots_.assign(node->slots_.begin(), node->slots_.begin() + length);
    node->slots_.erase(node->slots_.begin(), node->slots_.begin() + length);
  }
  if (node->on_host()) {
    const size_t pages = length / static_cast<size_t>(page_size());
    upper->host_pages_.assign(node->host_pages_.begin(),
                              node->host_pages_.begin() + pages);
    node->host_pages_.erase(node->host_pages_.begin(),
                            node->host_pages_.begin() + pages);
  }
  upper->parent_ = parent;
  upper->lock_ref_ = node->lock_ref_;  // every lock on node passes through
  upper->last_access_ = node->last_access_;
  upper->hit_count_ = node->hit_count_;
  upper->loading_ = node->loading_;
  if (upper->loading_) ++loading_nodes_;
  node->key_.erase(node->key_.begin(), node->key_.begin() + length);

  auto it = parent->children_.find(PageKey(upper->key_));
  std::unique_ptr<RadixNode> lower = std::move(it->second);
  lower->parent_ = upper.get();
  RadixNode* upper_raw = upper.get();
  upper_raw->children_.emplace(PageKey(lower->key_), std::move(lower));
  it->second = std::move(upper);
  ++num_nodes_;
  return upper_raw;
}

int64_t RadixCache::PrefixLength(std::span<const int32_t> tokens) const {
  if (disabled()) return 0;
  const size_t aligned = tokens.size() - tokens.size() % page_size();
  size_t pos = 0;
  const RadixNode* node = root_.get();
  while (pos < aligned) {
    auto rest = tokens.subspan(pos, aligned - pos);
    auto it = node->children_.find(PageKey(rest));
    if (it == node->children_.end()) break;
    const RadixNode* child = it->second.get();
    const size_t k = MatchLength(child->key_, rest);
    pos += k;
    if (k < child->key_.size()) break;
    node = child;
  }
  return static_cast<int64_t>(pos);
}

RadixCache::MatchResult RadixCache::MatchPrefix(
    std::span<const int32_t> tokens, bool record_stats) {
  MatchResult result;
  result.last_node = root_.get();
  if (record_stats) tokens_queried_ += static_cast<int64_t>(tokens.size());
  if (disabled()) return result;

  size_t aligned = tokens.size() - tokens.size() % page_size();
  size_t pos = 0;
  RadixNode* node = root_.get();
  Touch(node);
  while (pos < aligned) {
    auto rest = tokens.subspan(pos, aligned - pos);
    auto it = node->children_.find(PageKey(rest));
    if (it == node->children_.end()) break;
    RadixNode* child = it->second.get();
    if (!child->on_device() || child->loading_) {
      result.loading = child->loading_;
      break;
    }
    size_t k = MatchLength(child->key_, rest);
    const bool partial = k < child->key_.size();
    if (partial) child = Split(child, k);
    Touch(child);
    if (record_stats) ++child->hit_count_;
    result.slots.insert(result.slots.end(), child->slots_.begin(),
                        child->slots_.end());
    node = child;
    pos += k;
    if (partial) break;
  }
  result.length = static_cast<int64_t>(pos);
  result.last_node = node;
  if (record_stats) tokens_matched_ += result.length;
  // What the host tier holds beyond the device match (no splits).
  const RadixNode* h = node;
  while (pos < aligned) {
    auto rest = tokens.subspan(pos, aligned - pos);
    auto it = h->children_.find(PageKey(rest));
    if (it == h->children_.end() || it->second->on_device()) break;
    const size_t k = MatchLength(it->second->key_, rest);
    result.host_length += static_cast<int64_t>(k);
    pos += k;
    if (k < it->second->key_.size()) break;
    h = it->second.get();
  }
  return result;
}

std::vector<RadixNode*> RadixCache::MatchHost(std::span<const int32_t> tokens) {
  std::vector<RadixNode*> out;
  if (disabled()) return out;
  const size_t aligned = tokens.size() - tokens.size() % page_size();
  size_t pos = 0;
  RadixNode* node = root_.get();
  while (pos < aligned) {
    auto rest = tokens.subspan(pos, aligned - pos);
    auto it = node->children_.find(PageKey(rest));
    if (it == node->children_.end()) break;
    RadixNode* child = it->second.get();
    const size_t k = MatchLength(child->key_, rest);
    if (k == 0 || child->loading_) break;
    const bool partial = k < child->key_.size();
    if (child->on_device()) {
      if (partial || !out.empty()) break;
    } else {
      if (partial) child = Split(child, k);
      Touch(child);
      out.push_back(child);
    }
    node = child;
    pos += k;
    if (partial) break;
  }
  return out;
}

void RadixCache::CountDevice(const RadixNode* node, int64_t sign) {
  const int64_t len = sign * static_cast<int64_t>(node->key_.size());
  (node->lock_ref_ == 0 ? evictable_size_ : protected_size_) += len;
}

Status RadixCache::SetDeviceSlots(RadixNode* node, std::vector<int32_t> slots) {
  if (node == nullptr || node == root_.get() || node->on_device() ||
      slots.size() != node->key_.size() ||
      (node->parent_ != root_.get() && !node->parent_->on_device())) {
    return FailedPreconditionError(
        "radix cache: device slots go only to a host-only node under a "
        "device node, one slot per token");
  }
  node->slots_ = std::move(slots);
  CountDevice(node, +1);
  node->loading_ = true;
  ++loading_nodes_;
  return OkStatus();
}

void RadixCache::SetLoading(RadixNode* node, bool loading) {
  if (node->loading_ == loading) return;
  node->loading_ = loading;
  loading_nodes_ += loading ? 1 : -1;
}

Status RadixCache::DropHostCopy(RadixNode* node, const FreeFn& free_host) {
  if (node == nullptr || node == root_.get() || !node->on_host() ||
      node->loading_) {
    return FailedPreconditionError(
        "radix cache: no host copy to drop (or the node is loading)");
  }
  if (!node->on_device()) {
    RemoveSubtree(node, nullptr, free_host);
    return OkStatus();
  }
  if (free_host) free_host(node->host_pages_);
  host_size_ -= static_cast<int64_t>(node->key_.size());
  node->host_pages_.clear();
  return OkStatus();
}

Status RadixCache::DropDeviceCopy(RadixNode* node, const FreeFn& free_device) {
  if (node == nullptr || node == root_.get() || !node->on_device() ||
      !node->on_host() || node->lock_ref_ != 0) {
    return FailedPreconditionError(
        "radix cache: only an unlocked node with a host copy can drop its "
        "device copy");
  }
  for (const auto& [key, child] : node->children_) {
    if (child->on_device()) {
      return FailedPreconditionError(
          "radix cache: a node with a child on the device keeps its device "
          "copy");
    }
  }
  if (free_device) free_device(node->slots_);
  CountDevice(node, -1);
  node->slots_.clear();
  SetLoading(node, false);
  return OkStatus();
}

Status RadixCache::SetHostPages(RadixNode* node, std::vector<int32_t> pages) {
  if (node == nullptr || node == root_.get() || node->on_host() ||
      pages.size() * static_cast<size_t>(page_size()) != node->key_.size()) {
    return FailedPreconditionError(
        "radix cache: host pages go only to a node without a host copy, one "
        "page per page of its key");
  }
  node->host_pages_ = std::move(pages);
  host_size_ += static_cast<int64_t>(node->key_.size());
  return OkStatus();
}

StatusOr<int64_t> RadixCache::Insert(std::span<const int32_t> tokens,
                                     std::span<const int32_t> slots,
                                     std::vector<RadixNode*>* path) {
  if (tokens.size() != slots.size()) {
    return InvalidArgumentError(fmt::format(
        "radix cache insert: {} tokens but {} slots; pass one KV slot per "
        "token",
        tokens.size(), slots.size()));
  }
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (disabled()) return n;
  const size_t ps = static_cast<size_t>(page_size());
  const size_t aligned = tokens.size() - tokens.size() % ps;
  for (size_t i = 0; i < aligned; ++i) {
    int32_t first = slots[i - i % ps];
    if (slots[i] < 0 || first % page_size() != 0 ||
        slots[i] != first + static_cast<int32_t>(i % ps)) {
      return InvalidArgumentError(fmt::format(
          "radix cache insert: slot {} at position {} does not belong to a "
          "page-aligned page of size {} (page starts at slot {}); pass slots "
          "from KvPool::SlotOf over the sequence's page list",
          slots[i], i, ps, first));
    }
  }

  RadixNode* node = root_.get();
  Touch(node);
  size_t pos = 0;
  // Where the device copy of the path ends (host-only nodes after it adopt
  // the caller's slots); unset while every node so far is on the device.
  std::optional<size_t> device_end;
  while (pos < aligned) {
    auto rest = tokens.subspan(pos, aligned - pos);
    auto it = node->children_.find(PageKey(rest));
    if (it == node->children_.end()) {
      auto leaf = std::make_unique<RadixNode>();
      leaf->key_.assign(rest.begin(), rest.end());
      leaf->slots_.assign(slots.begin() + pos, slots.begin() + aligned);
      leaf->parent_ = node;
      Touch(leaf.get());
      // A new leaf is unlocked, hence evictable.
      evictable_size_ += static_cast<int64_t>(rest.size());
      ++num_nodes_;
      if (path != nullptr) path->push_back(leaf.get());
      node->children_.emplace(PageKey(rest), std::move(leaf));
      return static_cast<int64_t>(device_end.value_or(pos));
    }
    RadixNode* child = it->second.get();
    size_t k = MatchLength(child->key_, rest);
    if (k < child->key_.size()) child = Split(child, k);
    Touch(child);
    if (!child->on_device()) {
      if (!device_end) device_end = pos;
      child->slots_.assign(slots.begin() + pos, slots.begin() + pos + k);
      CountDevice(child, +1);
    }
    if (path != nullptr) path->push_back(child);
    node = child;
    pos += k;
  }
  return static_cast<int64_t>(device_end.value_or(pos));
}

int64_t RadixCache::InsertHost(std::span<const int32_t> tokens,
                               int64_t first_page,
                               std::span<const int32_t> host_pages) {
  const int64_t none = static_cast<int64_t>(host_pages.size());
  if (disabled()) return none;
  const size_t ps = static_cast<size_t>(page_size());
  // tokens must cover every page given.
  if (tokens.size() < static_cast<size_t>(first_page + none) * ps) return none;
  const size_t aligned = static_cast<size_t>(first_page + none) * ps;
  RadixNode* node = root_.get();
  size_t pos = 0;
  while (pos < aligned) {
    auto rest = tokens.subspan(pos, aligned - pos);
    auto it = node->children_.find(PageKey(rest));
    if (it == node->children_.end()) break;
    RadixNode* child = it->second.get();
    const size_t k = MatchLength(child->key_, rest);
    if (k < child->key_.size()) child = Split(child, k);
    Touch(child);
    node = child;
    pos += k;
  }
  if (pos >= aligned || pos < static_cast<size_t>(first_page) * ps) return none;
  const int64_t from = static_cast<int64_t>(pos / ps) - first_page;
  auto leaf = std::make_unique<RadixNode>();
  leaf->key_.assign(tokens.begin() + pos, tokens.begin() + aligned);
  leaf->host_pages_.assign(
      host_pages.begin() + from,
      host_pages.begin() + from + static_cast<int64_t>((aligned - pos) / ps));
  leaf->parent_ = node;
  Touch(leaf.get());
  host_size_ += static_cast<int64_t>(leaf->key_.size());
  ++num_nodes_;
  node->children_.emplace(PageKey(leaf->key_), std::move(leaf));
  return from;
}

void RadixCache::IncLockRef(RadixNode* node) {
  if (node == nullptr || node == root_.get()) return;
  ++node->direct_locks_;
  for (RadixNode* n = node; n != root_.get(); n = n->parent_) {
    if (n->lock_ref_ == 0 && n->on_device()) {
      int64_t len = static_cast<int64_t>(n->key_.size());
      evictable_size_ -= len;
      protected_size_ += len;
    }
    ++n->lock_ref_;
  }
}

Status RadixCache::DecLockRef(RadixNode* node) {
  if (node == nullptr || node == root_.get()) return OkStatus();
  if (node->direct_locks_ <= 0) {
    return FailedPreconditionError(fmt::format(
        "radix cache: DecLockRef on a node holding no lock of its own "
        "(lock_ref {}); call it once per IncLockRef on the same node",
        node->lock_ref_));
  }
  --node->direct_locks_;
  for (RadixNode* n = node; n != root_.get(); n = n->parent_) {
    --n->lock_ref_;
    if (n->lock_ref_ == 0 && n->on_device()) {
      int64_t len = static_cast<int64_t>(n->key_.size());
      evictable_size_ += len;
      protected_size_ -= len;
    }
  }
  return OkStatus();
}

namespace {

template <class Children>
bool HasDeviceChild(const Children& children) {
  for (const auto& [key, child] : children) {
    if (child->on_device()) return true;
  }
  return false;
}

}  // namespace

void RadixCache::RemoveSubtree(RadixNode* node, const FreeFn& free_device,
                               const FreeFn& free_host) {
  std::vector<RadixNode*> stack = {node};
  while (!stack.empty()) {
    RadixNode* n = stack.back();
    stack.pop_back();
    for (auto& [key, child] : n->children_) stack.push_back(child.get());
    if (n->on_device()) {
      if (free_device) free_device(n->slots_);
      CountDevice(n, -1);
    }
    if (n->on_host()) {
      if (free_host) free_host(n->host_pages_);
      host_size_ -= static_cast<int64_t>(n->key_.size());
    }
    if (n->loading_) --loading_nodes_;
    --num_nodes_;
  }
  node->parent_->children_.erase(PageKey(node->key_));  // destroys the subtree
}

int64_t RadixCache::Evict(int64_t num_tokens, const FreeFn& free_fn) {
  return Evict(num_tokens, EvictHooks{free_fn, nullptr, nullptr});
}

int64_t RadixCache::Evict(int64_t num_tokens, const EvictHooks& hooks) {
  if (num_tokens <= 0) return 0;
  // Collecting the leaves is O(nodes) per call, as in SGLang; eviction runs
  // only when the pool is short of pages, not per token. A device leaf is
  // a node on the device, unlocked, with no child on the device.
  auto device_leaf = [this](const RadixNode* n) {
    return n != root_.get() && n->on_device() && n->lock_ref_ == 0 &&
           !HasDeviceChild(n->children_);
  };
  using Entry = std::pair<uint64_t, RadixNode*>;  // (last access, leaf)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<RadixNode*> stack = {root_.get()};
  while (!stack.empty()) {
    RadixNode* n = stack.back();
    stack.pop_back();
    for (auto& [key, child] : n->children_) {
      if (child->on_device()) stack.push_back(child.get());
    }
    if (device_leaf(n)) heap.emplace(n->last_access_, n);
  }
  int64_t freed = 0;
  while (freed < num_tokens && !heap.empty()) {
    RadixNode* leaf = heap.top().second;
    heap.pop();
    const int64_t len = static_cast<int64_t>(leaf->key_.size());
    RadixNode* parent = leaf->parent_;
    if (!leaf->on_host() && hooks.backup) (void)hooks.backup(leaf);
    if (leaf->on_host()) {
      // Demote: the KV stays on the host, the node stays in the tree.
      if (hooks.free_device) hooks.free_device(leaf->slots_);
      CountDevice(leaf, -1);
      leaf->slots_.clear();
    } else {
      RemoveSubtree(leaf, hooks.free_device, hooks.free_host);
    }
    freed += len;
    if (device_leaf(parent)) heap.emplace(parent->last_access_, parent);
  }
  return freed;
}

int64_t RadixCache::EvictHost(int64_t num_pages, const FreeFn& free_host) {
  if (num_pages <= 0) return 0;
  auto host_leaf = [this](const RadixNode* n) {
    return n != root_.get() && !n->on_device() && n->on_host() &&
           n->children_.empty() && n->lock_ref_ == 0 && !n->loading_;
  };
  using Entry = std::pair<uint64_t, RadixNode*>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<RadixNode*> stack = {root_.get()};
  while (!stack.empty()) {
    RadixNode* n = stack.back();
    stack.pop_back();
    for (auto& [key, child] : n->children_) stack.push_back(child.get());
    if (host_leaf(n)) heap.emplace(n->last_access_, n);
  }
  int64_t freed = 0;
  while (freed < num_pages && !heap.empty()) {
    RadixNode* leaf = heap.top().second;
    heap.pop();
    RadixNode* parent = leaf->parent_;
    freed += static_cast<int64_t>(leaf->host_pages_.size());
    RemoveSubtree(leaf, nullptr, free_host);
    if (host_leaf(parent)) heap.emplace(parent->last_access_, parent);
  }
  return freed;
}

Status RadixCache::ResetHost(const FreeFn& free_host) {
  if (loading_nodes_ > 0) {
    return FailedPreconditionError(
        "radix cache: cannot drop the host tier while pages load from it");
  }
  std::vector<RadixNode*> drop;  // host-only nodes under a device node
  std::vector<RadixNode*> stack = {root_.get()};
  while (!stack.empty()) {
    RadixNode* n = stack.back();
    stack.pop_back();
    for (auto& [key, child] : n->children_) {
      if (child->on_device()) {
        stack.push_back(child.get());
      } else {
        drop.push_back(child.get());
      }
    }
    if (n != root_.get() && n->on_host()) {
      if (free_host) free_host(n->host_pages_);
      host_size_ -= static_cast<int64_t>(n->key_.size());
      n->host_pages_.clear();
    }
  }
  for (RadixNode* n : drop) RemoveSubtree(n, nullptr, free_host);
  return OkStatus();
}

Status RadixCache::Reset(const FreeFn& free_fn, const FreeFn& free_host) {
  if (protected_size_ > 0) {
    return FailedPreconditionError(fmt::format(
        "radix cache: cannot flush while {} cached tokens are locked by "
        "running requests; finish or abort them first",
        protected_size_));
  }
  if (free_fn || free_host) {
    std::vector<const RadixNode*> stack = {root_.get()};
    while (!stack.empty()) {
      const RadixNode* n = stack.back();
      stack.pop_back();
      if (!n->slots_.empty() && free_fn) free_fn(n->slots_);
      if (!n->host_pages_.empty() && free_host) free_host(n->host_pages_);
      for (const auto& [key, child] : n->children_)
        stack.push_back(child.get());
    }
  }
  root_ = std::make_unique<RadixNode>();
  evictable_size_ = protected_size_ = num_nodes_ = 0;
  host_size_ = loading_nodes_ = 0;
  clock_ = 0;
  tokens_queried_ = tokens_matched_ = 0;
  return OkStatus();
}

Status RadixCache::CheckIntegrity() const {
  const RadixNode* root = root_.get();
  if (root->parent_ != nullptr || !root->key_.empty() ||
      !root->slots_.empty() || root->lock_ref_ != 0 ||
      root->direct_locks_ != 0) {
    return InternalError(
        "radix cache: root must have no parent, key, slots or locks");
  }
  if (disabled() && !root->children_.empty()) {
    return InternalError("radix cache: disabled cache holds nodes");
  }
  const size_t ps = static_cast<size_t>(page_size());
  int64_t evictable = 0, protected_tokens = 0, nodes = 0, host = 0,
          loading = 0;
  std::unordered_set<int32_t> seen_slots, seen_host;
  std::vector<const RadixNode*> stack = {root};
  while (!stack.empty()) {
    const RadixNode* n = stack.back();
    stack.pop_back();
    if (n->last_access_ > clock_) {
      return InternalError(
          fmt::format("radix cache: node tick {} is beyond the clock {}",
                      n->last_access_, clock_));
    }
    int64_t child_locks = 0;
    for (const auto& [map_key, child] : n->children_) {
      if (child == nullptr) return InternalError("radix cache: null child");
      if (child->parent_ != n) {
        return InternalError("radix cache: child's parent pointer is wrong");
      }
      if (child->key_.empty()) {
        return InternalError("radix cache: non-root node with an empty key");
      }
      if (PageKey(child->key_) != map_key) {
        return InternalError(fmt::format(
            "radix cache: child keyed by first token {} starts with token {}",
            map_key.empty() ? -1 : map_key[0], child->key_[0]));
      }
      child_locks += child->lock_ref_;
      stack.push_back(child.get());
    }
    if (n == root) continue;
    ++nodes;
    if (n->on_device() && n->key_.size() != n->slots_.size()) {
      return InternalError(
          fmt::format("radix cache: node has {} tokens but {} slots",
                      n->key_.size(), n->slots_.size()));
    }
    if (!n->on_device() && !n->on_host()) {
      return InternalError(
          "radix cache: a node holds its KV neither on the device nor on the "
          "host");
    }
    if (n->on_device() && n->parent_ != root && !n->parent_->on_device()) {
      return InternalError(
          "radix cache: a device node sits under a node evicted from the "
          "device");
    }
    if (n->on_host()) {
      if (n->host_pages_.size() * ps != n->key_.size()) {
        return InternalError(fmt::format(
            "radix cache: node of {} tokens has {} host pages of {}",
            n->key_.size(), n->host_pages_.size(), ps));
      }
      for (int32_t page : n->host_pages_) {
        if (page < 0 || !seen_host.insert(page).second) {
          return InternalError(fmt::format(
              "radix cache: host page {} appears twice in the tree", page));
        }
      }
      host += static_cast<int64_t>(n->key_.size());
    }
    if (n->loading_) {
      ++loading;
      if (!n->on_device() || !n->on_host() || n->lock_ref_ <= 0) {
        return InternalError(
            "radix cache: a loading node must be on the device and the host, "
            "and locked");
      }
    }
    if (n->key_.size() % ps != 0) {
      return InternalError(
          fmt::format("radix cache: edge of {} tokens is not whole pages of {}",
                      n->key_.size(), ps));
    }
    for (size_t i = 0; i < n->slots_.size(); ++i) {
      int32_t first = n->slots_[i - i % ps];
      if (n->slots_[i] < 0 || first % page_size() != 0 ||
          n->slots_[i] != first + static_cast<int32_t>(i % ps)) {
        return InternalError(fmt::format(
            "radix cache: slot {} breaks its page (page starts at slot {})",
            n->slots_[i], first));
      }
      if (!seen_slots.insert(n->slots_[i]).second) {
        return InternalError(fmt::format(
            "radix cache: slot {} appears twice in the tree", n->slots_[i]));
      }
    }
    if (n->lock_ref_ < 0 || n->direct_locks_ < 0 ||
        n->lock_ref_ != n->direct_locks_ + child_locks) {
      return InternalError(fmt::format(
          "radix cache: lock_ref {} != own locks {} + children's {}",
          n->lock_ref_, n->direct_locks_, child_locks));
    }
    if (n->on_device()) {
      (n->lock_ref_ == 0 ? evictable : protected_tokens) +=
          static_cast<int64_t>(n->key_.size());
    }
  }
  if (evictable != evictable_size_ || protected_tokens != protected_size_) {
    return InternalError(fmt::format(
        "radix cache: evictable/protected sizes {}/{} but the tree holds "
        "{}/{}",
        evictable_size_, protected_size_, evictable, protected_tokens));
  }
  if (host != host_size_ || loading != loading_nodes_) {
    return InternalError(fmt::format(
        "radix cache: host size / loading nodes {}/{} but the tree holds "
        "{}/{}",
        host_size_, loading_nodes_, host, loading));
  }
  if (nodes != num_nodes_) {
    return InternalError(fmt::format(
        "radix cache: node count {} but the tree has {}", num_nodes_, nodes));
  }
  if (tokens_matched_ > tokens_queried_) {
    return InternalError("radix cache: more tokens matched than queried");
  }
  return OkStatus();
}

}  // namespace tessera::kv
