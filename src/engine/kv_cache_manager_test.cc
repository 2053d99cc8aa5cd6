// KvCacheManager over a real KV pool (cpu plugin) and radix cache: page
// ownership through match, reserve, cache-while-running, release and
// eviction, with the pool and tree invariants checked after every phase.
#include "engine/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>

#include "model/runner_test_util.h"

namespace tessera::engine {
namespace {

class KvCacheManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rt = model::testing::CreateRuntime();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(*rt);
  }
  void Make(int64_t pages, bool disabled = false) {
    kv::KvPoolOptions o;
    o.num_layers = 1;
    o.num_kv_heads = 1;
    o.head_dim = 4;
    o.page_size = 4;
    o.capacity_tokens = pages * 4;
    auto pool = kv::KvPool::Create(runtime_->device(0), o);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(*pool);
    cache_ = std::make_unique<kv::RadixCache>(
        kv::RadixCacheOptions{4, disabled});
    kv_ = std::make_unique<KvCacheManager>(*pool_, *cache_);
  }
  static std::vector<int32_t> Iota(int n, int start = 0) {
    std::vector<int32_t> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
  }
  void ExpectIntegrity() {
    Status s = kv_->CheckIntegrity();
    EXPECT_TRUE(s.ok()) << s.ToString();
  }

  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<kv::KvPool> pool_;
  std::unique_ptr<kv::RadixCache> cache_;
  std::unique_ptr<KvCacheManager> kv_;
};

TEST_F(KvCacheManagerTest, ReleasedTokensAreReusedByTheNextSequence) {
  Make(32);
  const auto tokens = Iota(41);
  SequenceKv a;
  EXPECT_EQ(kv_->MatchAndLock(tokens, a), 0);
  ASSERT_TRUE(kv_->Reserve(a, 41).ok());
  EXPECT_EQ(a.pages.size(), 11u);
  ASSERT_TRUE(kv_->Release(tokens, a).ok());
  EXPECT_TRUE(a.pages.empty());
  // 40 aligned tokens stay cached (10 pages), the partial page is freed.
  EXPECT_EQ(cache_->total_size(), 40);
  EXPECT_EQ(pool_->num_used_pages(), 10);
  EXPECT_EQ(kv_->UsedTokens(), 0);
  ExpectIntegrity();

  SequenceKv b;
  EXPECT_EQ(kv_->MatchAndLock(std::span(tokens).first(40), b), 40);
  EXPECT_EQ(b.cache_len, 40);
  EXPECT_EQ(cache_->protected_size(), 40);
  ASSERT_TRUE(kv_->Reserve(b, 45).ok());
  EXPECT_EQ(b.pages.size(), 12u);
  ExpectIntegrity();
  ASSERT_TRUE(kv_->Release(std::span(tokens).first(41), b).ok());
  EXPECT_EQ(cache_->protected_size(), 0);
  EXPECT_EQ(pool_->num_used_pages(), 10);
  ExpectIntegrity();
}

TEST_F(KvCacheManagerTest, ConcurrentDuplicatePrefixesCollapseToOneCopy) {
  Make(32);
  const auto tokens = Iota(20);
  SequenceKv a, b;
  kv_->MatchAndLock(tokens, a);
  kv_->MatchAndLock(tokens, b);
  ASSERT_TRUE(kv_->Reserve(a, 20).ok());
  ASSERT_TRUE(kv_->Reserve(b, 20).ok());
  EXPECT_EQ(pool_->num_used_pages(), 10);
  ASSERT_TRUE(kv_->CacheComputed(tokens, a).ok());
  ASSERT_TRUE(kv_->CacheComputed(tokens, b).ok());
  // b's five pages were duplicates: freed, and b now reads a's pages.
  EXPECT_EQ(pool_->num_used_pages(), 5);
  EXPECT_EQ(a.pages, b.pages);
  EXPECT_EQ(cache_->protected_size(), 20);
  ExpectIntegrity();
  // Both grow past the prompt with their own pages.
  ASSERT_TRUE(kv_->Reserve(a, 23).ok());
  ASSERT_TRUE(kv_->Reserve(b, 23).ok());
  EXPECT_NE(a.pages.back(), b.pages.back());
  auto ta = Iota(22);
  auto tb = Iota(22);
  tb[21] = 99;
  ASSERT_TRUE(kv_->Release(ta, a).ok());
  ASSERT_TRUE(kv_->Release(tb, b).ok());
  EXPECT_EQ(cache_->protected_size(), 0);
  EXPECT_EQ(pool_->num_used_pages(), 5);
  EXPECT_EQ(kv_->UsedTokens(), 0);
  ExpectIntegrity();
}

TEST_F(KvCacheManagerTest, ReserveEvictsUnlockedCacheAndNeverLockedOnes) {
  Make(8);
  SequenceKv a;
  const auto ta = Iota(16);
  kv_->MatchAndLock(ta, a);
  ASSERT_TRUE(kv_->Reserve(a, 16).ok());
  ASSERT_TRUE(kv_->Release(ta, a).ok());  // 4 pages cached, unlocked
  SequenceKv b;
  const auto tb = Iota(16, 100);
  kv_->MatchAndLock(tb, b);
  ASSERT_TRUE(kv_->Reserve(b, 16).ok());
  ASSERT_TRUE(kv_->CacheComputed(tb, b).ok());  // 4 pages cached, locked
  EXPECT_EQ(pool_->num_free_pages(), 0);
  EXPECT_EQ(kv_->AvailableTokens(), 16);
  SequenceKv c;
  kv_->MatchAndLock(Iota(8, 500), c);
  ASSERT_TRUE(kv_->Reserve(c, 12).ok());  // evicts a's pages
  EXPECT_FALSE(kv_->CanReserve(c, 20));
  Status s = kv_->Reserve(c, 20);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(c.pages.size(), 3u);
  ExpectIntegrity();
  ASSERT_TRUE(kv_->Release({}, c).ok());
  ASSERT_TRUE(kv_->Release(tb, b).ok());
  EXPECT_EQ(kv_->UsedTokens(), 0);
  ASSERT_TRUE(kv_->Flush().ok());
  EXPECT_EQ(pool_->num_used_pages(), 0);
  ExpectIntegrity();
}

TEST_F(KvCacheManagerTest, DisabledCacheFreesEverythingOnRelease) {
  Make(16, /*disabled=*/true);
  const auto tokens = Iota(30);
  SequenceKv a;
  EXPECT_EQ(kv_->MatchAndLock(tokens, a), 0);
  ASSERT_TRUE(kv_->Reserve(a, 30).ok());
  ASSERT_TRUE(kv_->CacheComputed(tokens, a).ok());
  EXPECT_EQ(cache_->total_size(), 0);
  ASSERT_TRUE(kv_->Release(tokens, a).ok());
  EXPECT_EQ(pool_->num_used_pages(), 0);
  ExpectIntegrity();
}

}  // namespace
}  // namespace tessera::engine
