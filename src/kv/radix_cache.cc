#include "kv/radix_cache.h"

#include <fmt/format.h>

#include <algorithm>
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
  upper->slots_.assign(node->slots_.begin(), node->slots_.begin() + length);
  upper->parent_ = parent;
  upper->lock_ref_ = node->lock_ref_;  // every lock on node passes through
  upper->last_access_ = node->last_access_;
  node->key_.erase(node->key_.begin(), node->key_.begin() + length);
  node->slots_.erase(node->slots_.begin(), node->slots_.begin() + length);

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
    size_t k = MatchLength(child->key_, rest);
    const bool partial = k < child->key_.size();
    if (partial) child = Split(child, k);
    Touch(child);
    result.slots.insert(result.slots.end(), child->slots_.begin(),
                        child->slots_.end());
    node = child;
    pos += k;
    if (partial) break;
  }
  result.length = static_cast<int64_t>(pos);
  result.last_node = node;
  if (record_stats) tokens_matched_ += result.length;
  return result;
}

StatusOr<int64_t> RadixCache::Insert(std::span<const int32_t> tokens,
                                     std::span<const int32_t> slots) {
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
      node->children_.emplace(PageKey(rest), std::move(leaf));
      return static_cast<int64_t>(pos);
    }
    RadixNode* child = it->second.get();
    size_t k = MatchLength(child->key_, rest);
    if (k < child->key_.size()) child = Split(child, k);
    Touch(child);
    node = child;
    pos += k;
  }
  return static_cast<int64_t>(pos);
}

void RadixCache::IncLockRef(RadixNode* node) {
  if (node == nullptr || node == root_.get()) return;
  ++node->direct_locks_;
  for (RadixNode* n = node; n != root_.get(); n = n->parent_) {
    if (n->lock_ref_ == 0) {
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
    if (n->lock_ref_ == 0) {
      int64_t len = static_cast<int64_t>(n->key_.size());
      evictable_size_ += len;
      protected_size_ -= len;
    }
  }
  return OkStatus();
}

int64_t RadixCache::Evict(int64_t num_tokens, const FreeFn& free_fn) {
  if (num_tokens <= 0) return 0;
  // Collecting the leaves is O(nodes) per call, as in SGLang; eviction runs
  // only when the pool is short of pages, not per token.
  using Entry = std::pair<uint64_t, RadixNode*>;  // (last access, leaf)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<RadixNode*> stack = {root_.get()};
  while (!stack.empty()) {
    RadixNode* n = stack.back();
    stack.pop_back();
    for (auto& [key, child] : n->children_) stack.push_back(child.get());
    if (n != root_.get() && n->children_.empty() && n->lock_ref_ == 0) {
      heap.emplace(n->last_access_, n);
    }
  }
  int64_t freed = 0;
  while (freed < num_tokens && !heap.empty()) {
    RadixNode* leaf = heap.top().second;
    heap.pop();
    int64_t len = static_cast<int64_t>(leaf->key_.size());
    if (free_fn) free_fn(leaf->slots_);
    freed += len;
    evictable_size_ -= len;
    --num_nodes_;
    RadixNode* parent = leaf->parent_;
    parent->children_.erase(PageKey(leaf->key_));  // destroys leaf
    if (parent != root_.get() && parent->children_.empty() &&
        parent->lock_ref_ == 0) {
      heap.emplace(parent->last_access_, parent);
    }
  }
  return freed;
}

Status RadixCache::Reset(const FreeFn& free_fn) {
  if (protected_size_ > 0) {
    return FailedPreconditionError(fmt::format(
        "radix cache: cannot flush while {} cached tokens are locked by "
        "running requests; finish or abort them first",
        protected_size_));
  }
  if (free_fn) {
    std::vector<const RadixNode*> stack = {root_.get()};
    while (!stack.empty()) {
      const RadixNode* n = stack.back();
      stack.pop_back();
      if (!n->slots_.empty()) free_fn(n->slots_);
      for (const auto& [key, child] : n->children_)
        stack.push_back(child.get());
    }
  }
  root_ = std::make_unique<RadixNode>();
  evictable_size_ = protected_size_ = num_nodes_ = 0;
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
  int64_t evictable = 0, protected_tokens = 0, nodes = 0;
  std::unordered_set<int32_t> seen_slots;
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
    if (n->key_.size() != n->slots_.size()) {
      return InternalError(
          fmt::format("radix cache: node has {} tokens but {} slots",
                      n->key_.size(), n->slots_.size()));
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
    (n->lock_ref_ == 0 ? evictable : protected_tokens) +=
        static_cast<int64_t>(n->key_.size());
  }
  if (evictable != evictable_size_ || protected_tokens != protected_size_) {
    return InternalError(fmt::format(
        "radix cache: evictable/protected sizes {}/{} but the tree holds "
        "{}/{}",
        evictable_size_, protected_size_, evictable, protected_tokens));
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
