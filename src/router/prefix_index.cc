#include "router/prefix_index.h"

#include <xxhash.h>

namespace tessera::router {

std::vector<uint64_t> ApproxPrefixIndex::BlockKeys(std::string_view text) {
  std::vector<uint64_t> keys;
  uint64_t chain = 0;
  for (size_t i = 0; i + kBlockChars <= text.size(); i += kBlockChars) {
    chain = XXH3_64bits_withSeed(text.data() + i, kBlockChars, chain);
    keys.push_back(chain);
  }
  return keys;
}

void ApproxPrefixIndex::Touch(uint64_t key) {
  auto it = keys_.find(key);
  if (it != keys_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  lru_.push_front(key);
  keys_.emplace(key, lru_.begin());
  while (keys_.size() > max_blocks_) {
    keys_.erase(lru_.back());
    lru_.pop_back();
  }
}

size_t ApproxPrefixIndex::Match(std::string_view text) {
  const std::vector<uint64_t> keys = BlockKeys(text);
  MutexLock lock(&mu_);
  size_t n = 0;
  while (n < keys.size() && keys_.count(keys[n]) != 0) ++n;
  for (size_t i = 0; i < n; ++i) Touch(keys[i]);
  return n * kBlockChars;
}

void ApproxPrefixIndex::Insert(std::string_view text) {
  const std::vector<uint64_t> keys = BlockKeys(text);
  MutexLock lock(&mu_);
  for (uint64_t k : keys) Touch(k);
}

size_t ApproxPrefixIndex::size() const {
  MutexLock lock(&mu_);
  return keys_.size();
}

void ApproxPrefixIndex::Clear() {
  MutexLock lock(&mu_);
  keys_.clear();
  lru_.clear();
}

}  // namespace tessera::router
