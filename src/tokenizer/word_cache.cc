#include "tokenizer/word_cache.h"

namespace tessera::tok {

WordCache::Shard& WordCache::ShardFor(std::string_view word,
                                      size_t* hash) const {
  *hash = Hash()(word);
  return shards_[(*hash >> 7) % kShards];
}

bool WordCache::Lookup(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.size() > kMaxWordBytes || shard_capacity_ == 0) return false;
  size_t hash;
  Shard& shard = ShardFor(word, &hash);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.map.find(word);
  if (it == shard.map.end()) return false;
  ids->insert(ids->end(), it->second.begin(), it->second.end());
  return true;
}

void WordCache::Insert(std::string_view word,
                       std::span<const int32_t> ids) const {
  if (word.size() > kMaxWordBytes || shard_capacity_ == 0) return;
  size_t hash;
  Shard& shard = ShardFor(word, &hash);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.size() >= shard_capacity_) shard.map.clear();
  shard.map.emplace(std::string(word),
                    std::vector<int32_t>(ids.begin(), ids.end()));
}

size_t WordCache::size() const {
  size_t total = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    total += shard.map.size();
  }
  return total;
}

}  // namespace tessera::tok
