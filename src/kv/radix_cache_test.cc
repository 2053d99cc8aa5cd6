#include "kv/radix_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <vector>

namespace tessera::kv {

// Test-only access to the tree's internals, to corrupt it on purpose.
class RadixCacheTestPeer {
 public:
  static RadixNode* FirstChild(RadixCache& c, RadixNode* n = nullptr) {
    if (n == nullptr) n = c.root_.get();
    return n->children_.begin()->second.get();
  }
  static std::vector<int32_t>& Key(RadixNode* n) { return n->key_; }
  static std::vector<int32_t>& Slots(RadixNode* n) { return n->slots_; }
  static int32_t& LockRef(RadixNode* n) { return n->lock_ref_; }
  static RadixNode*& Parent(RadixNode* n) { return n->parent_; }
  static int64_t& Evictable(RadixCache& c) { return c.evictable_size_; }
};

namespace {

using Peer = RadixCacheTestPeer;
using Vec = std::vector<int32_t>;

int64_t InsertOk(RadixCache& c, const Vec& tokens, const Vec& slots) {
  auto r = c.Insert(tokens, slots);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : -1;
}

TEST(RadixCacheTest, EmptyMatchesNothing) {
  RadixCache c;
  auto m = c.MatchPrefix(Vec{1, 2, 3});
  EXPECT_EQ(m.length, 0);
  EXPECT_TRUE(m.slots.empty());
  EXPECT_EQ(m.last_node, c.root());
  EXPECT_TRUE(c.CheckIntegrity().ok());
}

TEST(RadixCacheTest, PartialMatchSplitsNodeKeepingSlots) {
  RadixCache c;
  EXPECT_EQ(InsertOk(c, {1, 2, 3, 4, 5}, {10, 11, 12, 13, 14}), 0);
  EXPECT_EQ(c.num_nodes(), 1);
  auto m = c.MatchPrefix(Vec{1, 2, 3, 9});
  EXPECT_EQ(m.length, 3);
  EXPECT_EQ(m.slots, (Vec{10, 11, 12}));
  EXPECT_EQ(c.num_nodes(), 2);
  EXPECT_EQ(m.last_node->key(), (Vec{1, 2, 3}));
  EXPECT_EQ(m.last_node->slots(), (Vec{10, 11, 12}));
  ASSERT_EQ(m.last_node->num_children(), 1u);
  EXPECT_EQ(c.total_size(), 5);
  ASSERT_TRUE(c.CheckIntegrity().ok()) << c.CheckIntegrity().ToString();
  // The full sequence still matches across the split.
  auto full = c.MatchPrefix(Vec{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(full.length, 5);
  EXPECT_EQ(full.slots, (Vec{10, 11, 12, 13, 14}));
}

TEST(RadixCacheTest, InsertOverlappingReturnsAlreadyCached) {
  RadixCache c;
  EXPECT_EQ(InsertOk(c, {1, 2, 3, 4}, {0, 1, 2, 3}), 0);
  // Shares 1,2 then diverges: 2 already cached, the split keeps both tails.
  EXPECT_EQ(InsertOk(c, {1, 2, 7, 8, 9}, {20, 21, 22, 23, 24}), 2);
  EXPECT_EQ(c.total_size(), 4 + 3);
  // Fully contained.
  EXPECT_EQ(InsertOk(c, {1, 2, 7}, {30, 31, 32}), 3);
  // Extends an existing leaf.
  EXPECT_EQ(InsertOk(c, {1, 2, 3, 4, 5}, {40, 41, 42, 43, 44}), 4);
  EXPECT_EQ(c.total_size(), 8);
  EXPECT_EQ(c.MatchPrefix(Vec{1, 2, 7, 8}).slots, (Vec{0, 1, 22, 23}));
  EXPECT_EQ(c.MatchPrefix(Vec{1, 2, 3, 4, 5}).slots, (Vec{0, 1, 2, 3, 44}));
  EXPECT_TRUE(c.CheckIntegrity().ok()) << c.CheckIntegrity().ToString();
  EXPECT_FALSE(c.Insert(Vec{1, 2}, Vec{1}).ok());
}

TEST(RadixCacheTest, LockedNodesSurviveEviction) {
  RadixCache c;
  InsertOk(c, {1, 2, 3}, {0, 1, 2});
  InsertOk(c, {5, 6}, {3, 4});
  auto m = c.MatchPrefix(Vec{1, 2, 3});
  c.IncLockRef(m.last_node);
  EXPECT_EQ(c.protected_size(), 3);
  EXPECT_EQ(c.evictable_size(), 2);
  ASSERT_TRUE(c.CheckIntegrity().ok());
  Vec freed;
  auto fn = [&](std::span<const int32_t> s) {
    freed.insert(freed.end(), s.begin(), s.end());
  };
  EXPECT_EQ(c.Evict(100, fn), 2);
  EXPECT_EQ(freed, (Vec{3, 4}));
  EXPECT_EQ(c.MatchPrefix(Vec{1, 2, 3}).length, 3);
  // A lock taken below a split point protects the ancestors as well.
  auto part = c.MatchPrefix(Vec{1, 2});
  EXPECT_EQ(part.last_node->lock_ref(), 1);
  EXPECT_TRUE(c.DecLockRef(m.last_node).ok());
  EXPECT_FALSE(c.DecLockRef(m.last_node).ok());  // no lock left to drop
  EXPECT_EQ(c.protected_size(), 0);
  EXPECT_EQ(c.evictable_size(), 3);
  ASSERT_TRUE(c.CheckIntegrity().ok());
  EXPECT_EQ(c.Evict(100, fn), 3);
  EXPECT_EQ(c.total_size(), 0);
  EXPECT_EQ(c.num_nodes(), 0);
}

TEST(RadixCacheTest, EvictsLeastRecentlyUsedFirstThenParents) {
  RadixCache c;
  InsertOk(c, {1, 1}, {0, 1});
  InsertOk(c, {2, 2}, {2, 3});
  InsertOk(c, {3, 3}, {4, 5});
  InsertOk(c, {2, 2, 9}, {6, 7, 8});  // leaf under {2,2}, touches {2,2}
  c.MatchPrefix(Vec{1, 1});           // {1,1} now the newest
  Vec order;
  auto fn = [&](std::span<const int32_t> s) { order.push_back(s[0]); };
  // Oldest is {3,3}; then the leaf {9}; then its parent {2,2}; then {1,1}.
  EXPECT_EQ(c.Evict(1, fn), 2);
  EXPECT_EQ(order, (Vec{4}));
  EXPECT_EQ(c.Evict(3, fn), 3);
  EXPECT_EQ(order, (Vec{4, 8, 2}));
  EXPECT_EQ(c.MatchPrefix(Vec{1, 1}).length, 2);
  EXPECT_EQ(c.Evict(1, fn), 2);
  EXPECT_EQ(order, (Vec{4, 8, 2, 0}));
  EXPECT_TRUE(c.CheckIntegrity().ok());
}

TEST(RadixCacheTest, PageAlignedMatchingWithPageSize4) {
  RadixCache c({.page_size = 4});
  Vec tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  Vec slots = {8, 9, 10, 11, 20, 21, 22, 23, 4, 5};  // pages 2, 5, 1
  // Only the two whole pages are cached; none was cached before.
  EXPECT_EQ(InsertOk(c, tokens, slots), 0);
  EXPECT_EQ(c.total_size(), 8);
  // Divergence inside the second page: the match stops at 4, splitting there.
  auto m = c.MatchPrefix(Vec{1, 2, 3, 4, 5, 6, 0, 0});
  EXPECT_EQ(m.length, 4);
  EXPECT_EQ(m.slots, (Vec{8, 9, 10, 11}));
  EXPECT_EQ(c.num_nodes(), 2);
  // A query shorter than a page matches nothing.
  EXPECT_EQ(c.MatchPrefix(Vec{1, 2, 3}).length, 0);
  // Same first token, different first page: a distinct sibling.
  EXPECT_EQ(InsertOk(c, {1, 2, 3, 9}, {12, 13, 14, 15}), 0);
  EXPECT_EQ(c.MatchPrefix(Vec{1, 2, 3, 9, 1}).slots, (Vec{12, 13, 14, 15}));
  EXPECT_EQ(InsertOk(c, {1, 2, 3, 4, 5, 6, 0, 0}, {8, 9, 10, 11, 0, 1, 2, 3}),
            4);
  ASSERT_TRUE(c.CheckIntegrity().ok()) << c.CheckIntegrity().ToString();
  // Slots that do not form whole pages are rejected.
  EXPECT_FALSE(c.Insert(Vec{7, 7, 7, 7}, Vec{1, 2, 3, 4}).ok());
  EXPECT_FALSE(c.Insert(Vec{7, 7, 7, 7}, Vec{24, 25, 27, 26}).ok());
  Vec freed;
  c.Evict(1000, [&](std::span<const int32_t> s) {
    EXPECT_EQ(s.size() % 4, 0u);
    freed.insert(freed.end(), s.begin(), s.end());
  });
  EXPECT_EQ(freed.size(), 16u);
  EXPECT_TRUE(c.CheckIntegrity().ok());
}

TEST(RadixCacheTest, ResetFreesEverythingButRefusesWhileLocked) {
  RadixCache c;
  InsertOk(c, {1, 2, 3}, {0, 1, 2});
  InsertOk(c, {1, 5}, {3, 4});
  auto m = c.MatchPrefix(Vec{1, 5});
  c.IncLockRef(m.last_node);
  EXPECT_FALSE(c.Reset().ok());
  EXPECT_EQ(c.total_size(), 4);
  ASSERT_TRUE(c.DecLockRef(m.last_node).ok());
  std::multiset<int32_t> freed;
  ASSERT_TRUE(c.Reset([&](std::span<const int32_t> s) {
                 freed.insert(s.begin(), s.end());
               }).ok());
  EXPECT_EQ(freed, (std::multiset<int32_t>{0, 1, 2, 4}));
  EXPECT_EQ(c.total_size(), 0);
  EXPECT_EQ(c.num_nodes(), 0);
  EXPECT_EQ(c.tokens_queried(), 0);
  EXPECT_EQ(c.MatchPrefix(Vec{1, 2}).length, 0);
  EXPECT_TRUE(c.CheckIntegrity().ok());
}

TEST(RadixCacheTest, HitRateCountsQueriedAndMatchedTokens) {
  RadixCache c;
  EXPECT_EQ(c.hit_rate(), 0.0);
  InsertOk(c, {1, 2, 3, 4}, {0, 1, 2, 3});
  c.MatchPrefix(Vec{1, 2, 3, 4});  // 4 of 4
  c.MatchPrefix(Vec{1, 2, 9, 9});  // 2 of 4
  c.MatchPrefix(Vec{7, 7});        // 0 of 2
  EXPECT_EQ(c.tokens_queried(), 10);
  EXPECT_EQ(c.tokens_matched(), 6);
  EXPECT_DOUBLE_EQ(c.hit_rate(), 0.6);
}

TEST(RadixCacheTest, DisabledCachesNothing) {
  RadixCache c({.page_size = 1, .disabled = true});
  EXPECT_EQ(InsertOk(c, {1, 2, 3}, {0, 1, 2}), 3);  // caller frees all 3
  EXPECT_EQ(c.MatchPrefix(Vec{1, 2, 3}).length, 0);
  EXPECT_EQ(c.total_size(), 0);
  EXPECT_EQ(c.tokens_queried(), 3);
  EXPECT_EQ(c.Evict(10, nullptr), 0);
  EXPECT_TRUE(c.CheckIntegrity().ok());
}

TEST(RadixCacheTest, CheckIntegrityDetectsCorruption) {
  auto build = [](RadixCache& c) {
    InsertOk(c, {1, 2, 3}, {0, 1, 2});
    InsertOk(c, {1, 2, 4}, {3, 4, 5});
    ASSERT_TRUE(c.CheckIntegrity().ok());
  };
  {  // child key no longer matches its map key
    RadixCache c;
    build(c);
    Peer::Key(Peer::FirstChild(c))[0] = 9;
    EXPECT_FALSE(c.CheckIntegrity().ok());
  }
  {  // key and slot lengths differ
    RadixCache c;
    build(c);
    Peer::Slots(Peer::FirstChild(c)).push_back(77);
    EXPECT_FALSE(c.CheckIntegrity().ok());
  }
  {  // a slot appears twice
    RadixCache c;
    build(c);
    RadixNode* top = Peer::FirstChild(c);
    Peer::Slots(Peer::FirstChild(c, top))[0] = Peer::Slots(top)[0];
    EXPECT_FALSE(c.CheckIntegrity().ok());
  }
  {  // lock_ref not implied by any lock
    RadixCache c;
    build(c);
    Peer::LockRef(Peer::FirstChild(c)) = 1;
    EXPECT_FALSE(c.CheckIntegrity().ok());
  }
  {  // parent pointer broken
    RadixCache c;
    build(c);
    RadixNode* top = Peer::FirstChild(c);
    Peer::Parent(Peer::FirstChild(c, top)) = nullptr;
    EXPECT_FALSE(c.CheckIntegrity().ok());
  }
  {  // incremental size out of step
    RadixCache c;
    build(c);
    Peer::Evictable(c) += 1;
    EXPECT_FALSE(c.CheckIntegrity().ok());
  }
  {  // empty non-root edge
    RadixCache c;
    build(c);
    RadixNode* top = Peer::FirstChild(c);
    RadixNode* leaf = Peer::FirstChild(c, top);
    Peer::Key(leaf).clear();
    Peer::Slots(leaf).clear();
    EXPECT_FALSE(c.CheckIntegrity().ok());
  }
}

// Random inserts, matches, locks, unlocks and evictions against a reference
// model: the set of cached page-aligned prefixes, each mapped to the first
// slot of its last page. Slots come from a simulated pool; none may leak or
// double-free.
void RunStress(int32_t page_size, uint32_t seed) {
  SCOPED_TRACE(testing::Message()
               << "page_size " << page_size << " seed " << seed);
  std::mt19937 rng(seed);
  const int32_t kPages = 160;  // small, so inserts hit eviction pressure
  RadixCache c({.page_size = page_size});
  std::map<Vec, int32_t> ref;       // cached prefix -> its last page's slot
  std::map<int32_t, Vec> by_slot;   // inverse of ref
  std::vector<int32_t> free_pages;  // simulated pool
  for (int32_t p = kPages - 1; p >= 0; --p) free_pages.push_back(p);
  struct Lock {
    RadixNode* node;
    Vec prefix;
  };
  std::vector<Lock> locks;
  std::vector<Vec> history;
  int64_t hits = 0, inner_ends = 0, evicted = 0, lock_count = 0;

  auto free_slots = [&](std::span<const int32_t> s) {
    ASSERT_EQ(s.size() % page_size, 0u);
    for (size_t i = 0; i < s.size(); i += page_size) {
      free_pages.push_back(s[i] / page_size);
    }
  };
  auto evict_fn = [&](std::span<const int32_t> s) {
    for (size_t i = 0; i < s.size(); i += page_size) {
      int32_t slot = s[i];
      auto it = by_slot.find(slot);
      ASSERT_NE(it, by_slot.end()) << "evicted slot " << slot << " not cached";
      ref.erase(it->second);
      by_slot.erase(it);
    }
    free_slots(s);
  };
  auto random_tokens = [&]() {
    Vec t;
    if (!history.empty() && rng() % 2 == 0) {
      const Vec& h = history[rng() % history.size()];
      t.assign(h.begin(), h.begin() + rng() % (h.size() + 1));
    }
    // Few distinct tokens and whole-page-scale lengths, so prefixes collide.
    size_t extra = rng() % (6 * page_size + 6);
    uint32_t vocab = page_size == 1 ? 3 : 2;
    for (size_t i = 0; i < extra; ++i) {
      t.push_back(static_cast<int32_t>(rng() % vocab));
    }
    return t;
  };
  auto expected_match = [&](const Vec& t) {
    size_t k = 0;
    while (k + page_size <= t.size() &&
           ref.count(Vec(t.begin(), t.begin() + k + page_size))) {
      k += page_size;
    }
    return k;
  };

  for (int op = 0; op < 4000; ++op) {
    int kind = static_cast<int>(rng() % 10);
    if (kind < 4) {  // insert
      Vec t = random_tokens();
      size_t pages = (t.size() + page_size - 1) / page_size;
      if (pages > free_pages.size()) {
        c.Evict(static_cast<int64_t>(pages * page_size), evict_fn);
      }
      if (pages > free_pages.size()) continue;
      Vec slots;
      for (size_t p = 0; p < pages; ++p) {
        int32_t page = free_pages.back();
        free_pages.pop_back();
        for (int32_t j = 0; j < page_size; ++j)
          slots.push_back(page * page_size + j);
      }
      slots.resize(t.size());
      size_t expect_cached = expected_match(t);
      auto r = c.Insert(t, slots);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_EQ(*r, static_cast<int64_t>(expect_cached));
      size_t aligned = t.size() - t.size() % page_size;
      for (size_t i = expect_cached; i < aligned; i += page_size) {
        Vec prefix(t.begin(), t.begin() + i + page_size);
        ref[prefix] = slots[i];
        by_slot[slots[i]] = prefix;
      }
      // The caller frees what the cache did not take: duplicates and tail.
      Vec mine(slots.begin(), slots.begin() + expect_cached);
      if (aligned < t.size()) {  // the whole tail page
        for (int32_t j = 0; j < page_size; ++j) {
          mine.push_back(slots[aligned] + j);
        }
      }
      free_slots(mine);
      history.push_back(t);
    } else if (kind < 7) {  // match, maybe lock
      Vec t = random_tokens();
      auto m = c.MatchPrefix(t);
      size_t k = expected_match(t);
      ASSERT_EQ(m.length, static_cast<int64_t>(k));
      hits += k > 0;
      inner_ends += k > 0 && m.last_node->num_children() > 0;
      for (size_t i = 0; i < k; ++i) {
        size_t page_end = i - i % page_size + page_size;
        ASSERT_EQ(m.slots[i], ref.at(Vec(t.begin(), t.begin() + page_end)) +
                                  static_cast<int32_t>(i % page_size));
      }
      if (k > 0 && rng() % 2 == 0) {
        c.IncLockRef(m.last_node);
        locks.push_back({m.last_node, Vec(t.begin(), t.begin() + k)});
        ++lock_count;
      }
    } else if (kind < 8 || locks.size() > 6) {  // unlock (bound the pinning)
      if (locks.empty()) continue;
      size_t i = rng() % locks.size();
      ASSERT_TRUE(c.DecLockRef(locks[i].node).ok());
      locks.erase(locks.begin() + i);
    } else {  // evict
      int64_t before = c.evictable_size();
      int64_t want = rng() % 24;
      int64_t got = c.Evict(want, evict_fn);
      ASSERT_GE(got, std::min(want, before));
      ASSERT_EQ(c.evictable_size(), before - got);
      evicted += got;
    }
    Status s = c.CheckIntegrity();
    ASSERT_TRUE(s.ok()) << "after op " << op << ": " << s.ToString();
    ASSERT_EQ(c.total_size(), static_cast<int64_t>(ref.size()) * page_size);
    // Locked prefixes are still cached in full; the reference stays
    // prefix-closed; no slot is both free and cached.
    for (const Lock& l : locks) {
      ASSERT_EQ(expected_match(l.prefix), l.prefix.size());
    }
    ASSERT_EQ(free_pages.size() + ref.size(), static_cast<size_t>(kPages));
    if (op % 16 == 0) {
      for (const auto& [prefix, slot] : ref) {
        if (prefix.size() == static_cast<size_t>(page_size)) continue;
        ASSERT_TRUE(ref.count(Vec(prefix.begin(), prefix.end() - page_size)))
            << "cached prefix whose parent page was evicted";
      }
    }
  }
  // The run must have exercised every path, or it proves little.
  std::printf(
      "page_size %d: %lld hits, %lld inner ends, %lld evicted, %lld locks\n",
      page_size, static_cast<long long>(hits),
      static_cast<long long>(inner_ends), static_cast<long long>(evicted),
      static_cast<long long>(lock_count));
  EXPECT_GT(hits, 200);
  EXPECT_GT(inner_ends, 20);
  EXPECT_GT(evicted, 100);
  EXPECT_GT(lock_count, 50);
  for (const Lock& l : locks) ASSERT_TRUE(c.DecLockRef(l.node).ok());
  ASSERT_TRUE(c.Reset(evict_fn).ok());
  EXPECT_TRUE(ref.empty());
  EXPECT_EQ(free_pages.size(), static_cast<size_t>(kPages));
  std::set<int32_t> unique(free_pages.begin(), free_pages.end());
  EXPECT_EQ(unique.size(), free_pages.size());
}

TEST(RadixCacheTest, RandomizedStressPageSize1) {
  for (uint32_t seed : {1u, 2u, 3u}) RunStress(1, seed);
}

TEST(RadixCacheTest, RandomizedStressPageSize4) {
  for (uint32_t seed : {4u, 5u, 6u}) RunStress(4, seed);
}

}  // namespace
}  // namespace tessera::kv
