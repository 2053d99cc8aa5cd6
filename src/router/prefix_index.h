// ApproxPrefixIndex: the router's guess of what one worker's radix cache
// holds, for the cache_aware policy (sgl-router keeps an approximate radix
// tree of request texts per worker; this is the same idea over fixed-size
// blocks).
//
// A text is cut into kBlockChars-byte blocks; block i's key is a hash of
// blocks 0..i (a chain), so a key stands for a whole prefix. Match returns
// how many leading bytes of a text (whole blocks) were inserted before;
// Insert records a text's block keys. At most `max_blocks` keys are kept,
// the least recently used go first: the worker's own cache forgets too.
//
// Thread-safety: thread-safe (one mutex).
#ifndef TESSERA_ROUTER_PREFIX_INDEX_H_
#define TESSERA_ROUTER_PREFIX_INDEX_H_

#include <cstdint>
#include <list>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"

namespace tessera::router {

class ApproxPrefixIndex {
 public:
  static constexpr size_t kBlockChars = 32;

  explicit ApproxPrefixIndex(size_t max_blocks = 1 << 18)
      : max_blocks_(max_blocks) {}

  // Leading bytes of `text` (a multiple of kBlockChars) this worker has
  // seen; refreshes their recency.
  size_t Match(std::string_view text) TSR_EXCLUDES(mu_);
  void Insert(std::string_view text) TSR_EXCLUDES(mu_);
  size_t size() const TSR_EXCLUDES(mu_);
  void Clear() TSR_EXCLUDES(mu_);

  // The chained block keys of `text`'s whole blocks.
  static std::vector<uint64_t> BlockKeys(std::string_view text);

 private:
  void Touch(uint64_t key) TSR_REQUIRES(mu_);

  const size_t max_blocks_;
  mutable Mutex mu_;
  std::list<uint64_t> lru_ TSR_GUARDED_BY(mu_);  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> keys_
      TSR_GUARDED_BY(mu_);
};

}  // namespace tessera::router

#endif  // TESSERA_ROUTER_PREFIX_INDEX_H_
