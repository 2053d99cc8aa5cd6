// The radix tree's host tier (HiCache): demotion on eviction, host-only
// matches, load-back, adoption on insert, host eviction and flushes, plus a
// randomized run that checks every invariant after each operation.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "kv/radix_cache.h"

namespace tessera::kv {
namespace {

using Vec = std::vector<int32_t>;

// Slots of `pages` consecutive pages starting at page `first` (size ps).
Vec PageSlots(int32_t first, int32_t pages, int32_t ps) {
  Vec s;
  for (int32_t p = 0; p < pages; ++p) {
    for (int32_t j = 0; j < ps; ++j) s.push_back((first + p) * ps + j);
  }
  return s;
}

class HostTierTest : public ::testing::Test {
 protected:
  static constexpr int32_t kPs = 2;
  RadixCache cache_{RadixCacheOptions{kPs, false}};
  std::set<int32_t> freed_slots_;
  std::set<int32_t> freed_host_;

  RadixCache::EvictHooks Hooks(bool backup = false) {
    RadixCache::EvictHooks h;
    h.free_device = [this](std::span<const int32_t> s) {
      for (int32_t x : s) EXPECT_TRUE(freed_slots_.insert(x).second) << x;
    };
    h.free_host = [this](std::span<const int32_t> s) {
      for (int32_t x : s) EXPECT_TRUE(freed_host_.insert(x).second) << x;
    };
    if (backup) {
      h.backup = [this](RadixNode* n) {
        Vec pages;
        for (size_t i = 0; i < n->key().size() / kPs; ++i) {
          pages.push_back(next_host_++);
        }
        return cache_.SetHostPages(n, pages).ok();
      };
    }
    return h;
  }
  // Inserts tokens with fresh pages and backs the leaf up to the host.
  RadixNode* InsertBacked(const Vec& tokens) {
    const int32_t pages = static_cast<int32_t>(tokens.size()) / kPs;
    std::vector<RadixNode*> path;
    auto r = cache_.Insert(tokens, PageSlots(next_page_, pages, kPs), &path);
    EXPECT_TRUE(r.ok());
    next_page_ += pages;
    for (RadixNode* n : path) {
      if (n->on_host()) continue;
      Vec host;
      for (size_t i = 0; i < n->key().size() / kPs; ++i) {
        host.push_back(next_host_++);
      }
      EXPECT_TRUE(cache_.SetHostPages(n, host).ok());
    }
    return path.back();
  }
  void ExpectIntegrity() {
    Status s = cache_.CheckIntegrity();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  int32_t next_page_ = 0;
  int32_t next_host_ = 0;
};

TEST_F(HostTierTest, EvictionDemotesABackedUpNode) {
  InsertBacked({1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(cache_.host_size(), 8);
  EXPECT_EQ(cache_.Evict(100, Hooks()), 8);
  EXPECT_EQ(freed_slots_.size(), 8u);
  EXPECT_TRUE(freed_host_.empty());
  EXPECT_EQ(cache_.total_size(), 0);
  EXPECT_EQ(cache_.host_size(), 8);
  EXPECT_EQ(cache_.num_nodes(), 1);
  auto m = cache_.MatchPrefix(Vec{1, 2, 3, 4, 5, 6, 9, 9});
  EXPECT_EQ(m.length, 0);
  EXPECT_EQ(m.host_length, 6);
  ExpectIntegrity();
}

TEST_F(HostTierTest, LoadBackSplitsAndIsNotMatchedUntilAcknowledged) {
  InsertBacked({1, 2, 3, 4, 5, 6, 7, 8});
  cache_.Evict(100, Hooks());
  std::vector<RadixNode*> host = cache_.MatchHost(Vec{1, 2, 3, 4, 9, 9});
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host[0]->key(), (Vec{1, 2, 3, 4}));
  EXPECT_EQ(host[0]->host_pages().size(), 2u);
  ASSERT_TRUE(cache_.SetDeviceSlots(host[0], PageSlots(40, 2, kPs)).ok());
  cache_.IncLockRef(host[0]);
  EXPECT_EQ(cache_.loading_nodes(), 1);
  ExpectIntegrity();
  EXPECT_EQ(cache_.MatchPrefix(Vec{1, 2, 3, 4, 5}).length, 0);
  // Loading nodes are neither loaded again nor evicted.
  EXPECT_TRUE(cache_.MatchHost(Vec{1, 2, 3, 4}).empty());
  EXPECT_EQ(cache_.Evict(100, Hooks()), 0);
  cache_.SetLoading(host[0], false);
  ASSERT_TRUE(cache_.DecLockRef(host[0]).ok());
  auto m = cache_.MatchPrefix(Vec{1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_EQ(m.length, 4);
  EXPECT_EQ(m.slots, PageSlots(40, 2, kPs));
  EXPECT_EQ(m.host_length, 4);
  ExpectIntegrity();
}

TEST_F(HostTierTest, InsertOverAHostOnlyNodeAdoptsTheCallersSlots) {
  InsertBacked({1, 2, 3, 4});
  cache_.Evict(100, Hooks());
  const Vec slots = PageSlots(20, 3, kPs);
  std::vector<RadixNode*> path;
  auto r = cache_.Insert(Vec{1, 2, 3, 4, 5, 6}, slots, &path);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 0);  // the device copy of the path ended at 0
  ASSERT_EQ(path.size(), 2u);
  EXPECT_TRUE(path[0]->on_device() && path[0]->on_host());
  EXPECT_TRUE(path[1]->on_device() && !path[1]->on_host());
  EXPECT_EQ(cache_.MatchPrefix(Vec{1, 2, 3, 4, 5, 6}).slots, slots);
  ExpectIntegrity();
}

TEST_F(HostTierTest, WriteBackBacksUpAtEviction) {
  ASSERT_TRUE(cache_.Insert(Vec{1, 2, 3, 4}, PageSlots(0, 2, kPs)).ok());
  EXPECT_EQ(cache_.Evict(100, Hooks(/*backup=*/true)), 4);
  EXPECT_EQ(cache_.num_nodes(), 1);
  EXPECT_EQ(cache_.host_size(), 4);
  EXPECT_EQ(cache_.MatchPrefix(Vec{1, 2, 3, 4}).host_length, 4);
  ExpectIntegrity();
}

TEST_F(HostTierTest, EvictingAnUnbackedParentDropsItsHostOnlySubtree) {
  // Parent on the device only, child on both; the child is demoted first,
  // then the parent (no host copy) goes with it.
  ASSERT_TRUE(cache_.Insert(Vec{1, 2}, PageSlots(0, 1, kPs)).ok());
  std::vector<RadixNode*> path;
  ASSERT_TRUE(cache_.Insert(Vec{1, 2, 3, 4}, PageSlots(0, 2, kPs), &path).ok());
  ASSERT_TRUE(cache_.SetHostPages(path[1], {7}).ok());
  EXPECT_EQ(cache_.Evict(100, Hooks()), 4);
  EXPECT_EQ(cache_.num_nodes(), 0);
  EXPECT_EQ(freed_host_, (std::set<int32_t>{7}));
  EXPECT_EQ(cache_.host_size(), 0);
  ExpectIntegrity();
}

TEST_F(HostTierTest, EvictHostRemovesLeastRecentlyUsedHostOnlyLeaves) {
  InsertBacked({1, 2, 3, 4});  // host pages 0, 1
  InsertBacked({5, 6, 7, 8});  // host pages 2, 3
  cache_.Evict(100, Hooks());
  cache_.MatchPrefix(Vec{5, 6});  // touches the second
  EXPECT_EQ(cache_.EvictHost(1, Hooks().free_host), 2);
  EXPECT_EQ(freed_host_, (std::set<int32_t>{0, 1}));
  EXPECT_EQ(cache_.MatchPrefix(Vec{5, 6, 7, 8}).host_length, 4);
  EXPECT_EQ(cache_.MatchPrefix(Vec{1, 2, 3, 4}).host_length, 0);
  ExpectIntegrity();
}

TEST_F(HostTierTest, ResetHostDropsEveryHostCopy) {
  InsertBacked({1, 2, 3, 4});
  cache_.Evict(100, Hooks());
  InsertBacked({5, 6, 7, 8});  // stays on the device too
  ASSERT_TRUE(cache_.ResetHost(Hooks().free_host).ok());
  EXPECT_EQ(cache_.host_size(), 0);
  EXPECT_EQ(freed_host_.size(), 4u);
  EXPECT_EQ(cache_.num_nodes(), 1);
  EXPECT_EQ(cache_.MatchPrefix(Vec{5, 6, 7, 8}).length, 4);
  ExpectIntegrity();
}

TEST_F(HostTierTest, CheckIntegrityRejectsALoadingNodeThatIsNotLocked) {
  InsertBacked({1, 2});
  cache_.Evict(100, Hooks());
  auto host = cache_.MatchHost(Vec{1, 2});
  ASSERT_EQ(host.size(), 1u);
  ASSERT_TRUE(cache_.SetDeviceSlots(host[0], PageSlots(3, 1, kPs)).ok());
  EXPECT_FALSE(cache_.CheckIntegrity().ok());
  cache_.IncLockRef(host[0]);
  ExpectIntegrity();
}

// Random inserts, matches, evictions (with and without write-back),
// host evictions and load-backs over a small alphabet; every slot and host
// page is owned exactly once (tree or free list) after each operation.
TEST_F(HostTierTest, RandomOperationsKeepEveryInvariant) {
  std::mt19937 rng(7);
  constexpr int32_t kPages = 24, kHostPages = 40;
  std::vector<int32_t> free_pages, free_host;
  for (int32_t p = kPages - 1; p >= 0; --p) free_pages.push_back(p);
  for (int32_t p = kHostPages - 1; p >= 0; --p) free_host.push_back(p);
  RadixCache::EvictHooks hooks;
  hooks.free_device = [&](std::span<const int32_t> s) {
    for (size_t i = 0; i < s.size(); i += kPs) free_pages.push_back(s[i] / kPs);
  };
  hooks.free_host = [&](std::span<const int32_t> s) {
    free_host.insert(free_host.end(), s.begin(), s.end());
  };
  auto backup = [&](RadixNode* n) {
    const size_t need = n->key().size() / kPs;
    if (free_host.size() < need) {
      cache_.EvictHost(static_cast<int64_t>(need), hooks.free_host);
    }
    if (free_host.size() < need) return false;
    Vec pages(free_host.end() - static_cast<std::ptrdiff_t>(need),
              free_host.end());
    free_host.resize(free_host.size() - need);
    return cache_.SetHostPages(n, pages).ok();
  };
  hooks.backup = backup;
  auto take_pages = [&](size_t n, Vec& slots) {
    if (free_pages.size() < n) {
      cache_.Evict(static_cast<int64_t>((n - free_pages.size()) * kPs), hooks);
    }
    if (free_pages.size() < n) return false;
    for (size_t i = 0; i < n; ++i) {
      const int32_t p = free_pages.back();
      free_pages.pop_back();
      for (int32_t j = 0; j < kPs; ++j) slots.push_back(p * kPs + j);
    }
    return true;
  };
  for (int step = 0; step < 3000; ++step) {
    Vec tokens;
    const int len = 2 * static_cast<int>(1 + rng() % 6);
    for (int i = 0; i < len; ++i) tokens.push_back(static_cast<int32_t>(rng() % 3));
    switch (rng() % 5) {
      case 0: {  // insert (the caller frees the device duplicates)
        Vec slots;
        if (!take_pages(tokens.size() / kPs, slots)) break;
        std::vector<RadixNode*> path;
        auto r = cache_.Insert(tokens, slots, &path);
        ASSERT_TRUE(r.ok());
        hooks.free_device(std::span<const int32_t>(slots).first(*r));
        if (rng() % 2 == 0) {
          for (RadixNode* n : path) {
            if (!n->on_host()) backup(n);
          }
        }
        break;
      }
      case 1:
        cache_.Evict(static_cast<int64_t>(rng() % 8), rng() % 2 ? hooks
                         : RadixCache::EvictHooks{hooks.free_device,
                                                  hooks.free_host, nullptr});
        break;
      case 2:
        cache_.EvictHost(static_cast<int64_t>(rng() % 4), hooks.free_host);
        break;
      case 3: {  // load back what the host holds, the path locked
        RadixNode* device_end =
            cache_.MatchPrefix(tokens, /*record_stats=*/false).last_node;
        cache_.IncLockRef(device_end);
        std::vector<RadixNode*> loaded;
        for (RadixNode* n : cache_.MatchHost(tokens)) {
          Vec slots;
          if (!take_pages(n->key().size() / kPs, slots)) break;
          ASSERT_TRUE(cache_.SetDeviceSlots(n, slots).ok());
          cache_.IncLockRef(n);
          loaded.push_back(n);
        }
        ASSERT_TRUE(cache_.CheckIntegrity().ok());
        for (RadixNode* n : loaded) {
          cache_.SetLoading(n, false);
          ASSERT_TRUE(cache_.DecLockRef(n).ok());
        }
        ASSERT_TRUE(cache_.DecLockRef(device_end).ok() ||
                    device_end == cache_.root());
        break;
      }
      default:
        cache_.MatchPrefix(tokens);
        break;
    }
    Status s = cache_.CheckIntegrity();
    ASSERT_TRUE(s.ok()) << "step " << step << ": " << s.ToString();
    ASSERT_EQ(static_cast<int64_t>(free_pages.size()) * kPs + cache_.total_size(),
              kPages * kPs)
        << "step " << step;
    ASSERT_EQ(static_cast<int64_t>(free_host.size()) * kPs + cache_.host_size(),
              kHostPages * kPs)
        << "step " << step;
  }
}

}  // namespace
}  // namespace tessera::kv
