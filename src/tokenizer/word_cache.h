// A bounded, thread-safe cache from a pre-token word to its BPE ids.
//
// Sharded by hash (one mutex per shard) so concurrent encoders rarely
// contend. A shard holding `capacity / kShards` words is cleared before the
// next insert, which bounds memory while adapting to new text. Words longer
// than kMaxWordBytes are never cached (they are rare and would crowd out the
// common short words). Thread-safe.
#ifndef TESSERA_TOKENIZER_WORD_CACHE_H_
#define TESSERA_TOKENIZER_WORD_CACHE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tessera::tok {

class WordCache {
 public:
  static constexpr size_t kShards = 16;
  static constexpr size_t kMaxWordBytes = 256;

  explicit WordCache(size_t capacity) : shard_capacity_(capacity / kShards) {}

  // Appends the cached ids of `word` to `ids` and returns true on a hit.
  bool Lookup(std::string_view word, std::vector<int32_t>* ids) const;
  void Insert(std::string_view word, std::span<const int32_t> ids) const;

  // Words currently held (for tests).
  size_t size() const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };
  struct Shard {
    mutable std::mutex mu;
    std::unordered_map<std::string, std::vector<int32_t>, Hash,
                       std::equal_to<>>
        map;  // GUARDED_BY(mu)
  };

  Shard& ShardFor(std::string_view word, size_t* hash) const;

  size_t shard_capacity_;
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_WORD_CACHE_H_
