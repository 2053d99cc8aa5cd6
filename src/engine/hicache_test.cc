// The host KV tier end to end in the engine (make-model tiny checkpoint,
// cpu plugin): greedy outputs identical with HiCache on and off while the
// device pool is far smaller than the working set, prefixes evicted from
// the device served from the host, per-tier flushes, and flag validation.
#include "engine/hicache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "engine/engine_test_fixture.h"
#include "kv/kv_pool.h"
#include "kv/radix_cache.h"
#include "model/runner_test_util.h"
#include "runtime/runtime.h"
#include "testing/redis_server.h"

namespace tessera::engine {
namespace {

using testing::Collected;
using testing::EngineTest;

class HiCacheEngineTest
    : public EngineTest,
      public ::testing::WithParamInterface<std::tuple<WritePolicy, kv::HostLayout>> {
 protected:
  // Conversations whose rounds resend the whole history: round r of
  // conversation c is the shared system prefix, then c's turns 0..r.
  static std::vector<std::vector<int32_t>> MultiTurnPrompts(int conversations,
                                                     int rounds) {
    std::vector<int32_t> system = Prompt(12, 99);
    std::vector<std::vector<int32_t>> out;
    for (int r = 0; r < rounds; ++r) {
      for (int c = 0; c < conversations; ++c) {
        std::vector<int32_t> p = system;
        for (int t = 0; t <= r; ++t) {
          std::vector<int32_t> turn = Prompt(10, 7 * c + t + 1);
          p.insert(p.end(), turn.begin(), turn.end());
        }
        out.push_back(std::move(p));
      }
    }
    return out;
  }
  // Runs every prompt alone, greedy, 6 new tokens each.
  std::vector<std::vector<int32_t>> RunAll(
      const std::vector<std::vector<int32_t>>& prompts,
      std::vector<int64_t>* cached = nullptr) {
    std::vector<std::vector<int32_t>> out;
    for (const auto& p : prompts) {
      Collected c = Run(Greedy(p, 6));
      EXPECT_TRUE(c.last.finished);
      out.push_back(c.ids);
      if (cached != nullptr) cached->push_back(c.last.cached_tokens);
    }
    return out;
  }
};

TEST_P(HiCacheEngineTest, GreedyOutputsEqualDeviceOnlyUnderEvictionPressure) {
  const auto prompts = MultiTurnPrompts(4, 3);  // up to 42 tokens each
  // Reference: a pool that holds everything, no host tier.
  Start({}, 4096, 4);
  const auto reference = RunAll(prompts);
  engine_->Shutdown(0);
  // The small device pool alone.
  Start({}, 64, 4);
  std::vector<int64_t> cached_device_only;
  EXPECT_EQ(RunAll(prompts, &cached_device_only), reference);
  engine_->Shutdown(0);

  EngineOptions o;
  o.hicache.enabled = true;
  o.hicache.write_policy = std::get<0>(GetParam());
  o.hicache.layout = std::get<1>(GetParam());
  o.hicache.ratio = 8;
  Start(o, 64, 4);  // the device pool holds ~1.3 prompts
  std::vector<int64_t> cached;
  const auto tiered = RunAll(prompts, &cached);
  EXPECT_EQ(tiered, reference);
  const EngineStats st = engine_->Stats();
  EXPECT_TRUE(st.hicache_enabled);
  EXPECT_EQ(st.hicache_transfer_failures_total, 0);
  EXPECT_GT(st.hicache_backup_pages_total, 0);
  if (std::get<0>(GetParam()) == WritePolicy::kWriteThroughSelective) {
    // Only prefixes hit twice get a host copy: here the shared system
    // prompt, which stays hot on the device anyway.
    return;
  }
  EXPECT_GT(st.host_hit_tokens_total, 0);
  EXPECT_GT(st.hicache_load_bytes_total, 0u);
  // Later rounds find their history although the device kept little of
  // it; without the host tier they find only the system prompt.
  int64_t late_cached = 0, late_device_only = 0;
  for (size_t i = 8; i < cached.size(); ++i) {
    late_cached += cached[i];
    late_device_only += cached_device_only[i];
  }
  EXPECT_GE(late_cached, 4 * 28);
  EXPECT_GT(late_cached, late_device_only);
  Status s = engine_->CheckIntegrity();
  EXPECT_TRUE(s.ok()) << s.ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Policies, HiCacheEngineTest,
    ::testing::Combine(::testing::Values(WritePolicy::kWriteThrough,
                                         WritePolicy::kWriteThroughSelective,
                                         WritePolicy::kWriteBack),
                       ::testing::Values(kv::HostLayout::kPageFirst,
                                         kv::HostLayout::kLayerFirst)),
    [](const auto& info) {
      return std::string(WritePolicyName(std::get<0>(info.param))) + "_" +
             kv::HostLayoutName(std::get<1>(info.param));
    });

TEST_F(EngineTest, HostTierServesAPrefixTheDeviceEvicted) {
  EngineOptions o;
  o.hicache.enabled = true;
  Start(o, 64, 4);
  const std::vector<int32_t> a = Prompt(40, 1);
  const Collected first = Run(Greedy(a, 4));
  // Two other prompts push a's pages off the device.
  Run(Greedy(Prompt(40, 2), 4));
  Run(Greedy(Prompt(40, 3), 4));
  const Collected again = Run(Greedy(a, 4));
  EXPECT_EQ(again.ids, first.ids);
  EXPECT_GE(again.last.cached_tokens, 36);
  EXPECT_GE(engine_->Stats().host_hit_tokens_total, 36);
}

TEST_F(EngineTest, FlushCacheByTier) {
  EngineOptions o;
  o.hicache.enabled = true;
  Start(o, 256, 4);
  Run(Greedy(Prompt(40, 1), 4));
  EngineStats st = engine_->Stats();
  EXPECT_GT(st.kv_cached_tokens, 0);
  ASSERT_TRUE(engine_->FlushCache("device").ok());
  st = engine_->Stats();
  EXPECT_EQ(st.kv_cached_tokens, 0);
  EXPECT_GT(st.host_cached_tokens, 0);
  // The prefix now comes from the host.
  const Collected again = Run(Greedy(Prompt(40, 1), 4));
  EXPECT_GE(again.last.cached_tokens, 36);
  ASSERT_TRUE(engine_->FlushCache("host").ok());
  EXPECT_EQ(engine_->Stats().host_cached_tokens, 0);
  Status unknown = engine_->FlushCache("disk");
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("device, host or storage"),
            std::string::npos);
  ASSERT_TRUE(engine_->FlushCache().ok());
}

TEST_F(EngineTest, HostTierFlagsAreValidated) {
  EngineOptions o;
  o.hicache.enabled = true;
  o.disable_radix_cache = true;
  auto rt = model::testing::CreateRuntime();
  ASSERT_TRUE(rt.ok());
  model::ModelRunnerOptions ro;
  ro.kv_capacity_tokens = 64;
  ro.page_size = 4;
  ro.show_progress = false;
  auto runner = model::ModelRunner::Create(**rt, *checkpoint_, ro);
  ASSERT_TRUE(runner.ok());
  auto engine = Engine::Create(**runner, *tokenizer_, o);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("--disable-radix-cache"),
            std::string::npos);
  o.disable_radix_cache = false;
  o.hicache.ratio = 0;
  engine = Engine::Create(**runner, *tokenizer_, o);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("--hicache-ratio"),
            std::string::npos);
  EXPECT_FALSE(ParseWritePolicy("write_around").ok());
}

// --- storage tier -------------------------------------------------------

class StorageTierTest : public EngineTest {
 protected:
  void SetUp() override {
    dir_path_ = (std::filesystem::temp_directory_path() /
                 ("tessera_hicache_storage_" + std::to_string(::getpid())))
                    .string();
    std::filesystem::remove_all(dir_path_);
  }
  void TearDown() override {
    EngineTest::TearDown();
    std::filesystem::remove_all(dir_path_);
  }
  EngineOptions FileTier() const {
    EngineOptions o;
    o.hicache.enabled = true;
    o.hicache.storage.backend = "file";
    o.hicache.storage.dir = dir_path_;
    o.hicache.prefetch_policy = PrefetchPolicy::kWaitComplete;
    o.hicache.model_identity = "engine-test-model";
    return o;
  }
  EngineOptions RedisTier(const std::string& url) const {
    EngineOptions o;
    o.hicache.enabled = true;
    o.hicache.storage.backend = "redis";
    o.hicache.storage.redis_url = url;
    o.hicache.storage.timeout_ms = 500;
    o.hicache.prefetch_policy = PrefetchPolicy::kWaitComplete;
    o.hicache.model_identity = "engine-test-model";
    return o;
  }
  std::vector<std::vector<int32_t>> Prompts() const {
    return {Prompt(40, 1), Prompt(44, 2), Prompt(36, 3)};
  }
  // Runs the prompts (6 greedy tokens each); cached tokens per request.
  std::vector<Collected> RunPrompts() {
    std::vector<Collected> out;
    for (const auto& p : Prompts()) out.push_back(Run(Greedy(p, 6)));
    return out;
  }
  std::string dir_path_;
};

TEST_F(StorageTierTest, ARestartedServerHitsWhatTheFileTierKept) {
  Start(FileTier(), 256, 4);
  const std::vector<Collected> cold = RunPrompts();
  engine_->Shutdown(0);  // drains the storage writes
  engine_.reset();
  ASSERT_FALSE(std::filesystem::is_empty(dir_path_));

  Start(FileTier(), 256, 4);
  const std::vector<Collected> warm = RunPrompts();
  for (size_t i = 0; i < warm.size(); ++i) {
    EXPECT_EQ(warm[i].ids, cold[i].ids) << i;
    EXPECT_EQ(cold[i].last.cached_tokens, 0) << i;
    EXPECT_GE(warm[i].last.cached_tokens, 32) << i;
  }
  const EngineStats st = engine_->Stats();
  EXPECT_TRUE(st.storage_enabled);
  EXPECT_GE(st.storage_hit_tokens_total, 96);
  EXPECT_EQ(st.storage_corrupt_pages_total, 0);
  // flush_cache?tier=storage empties the directory.
  ASSERT_TRUE(engine_->FlushCache("storage").ok());
  EXPECT_EQ(engine_->Stats().storage_objects, 0);
}

TEST_F(StorageTierTest, PrefetchPoliciesDecideWhetherARequestWaits) {
  Start(FileTier(), 256, 4);
  const std::vector<Collected> cold = RunPrompts();
  engine_->Shutdown(0);
  engine_.reset();
  // timeout: waits for the prefetch up to the limit (ample here), so the
  // first request after a restart already hits.
  EngineOptions timeout = FileTier();
  timeout.hicache.prefetch_policy = PrefetchPolicy::kTimeout;
  timeout.hicache.prefetch_timeout_s = 30;
  Start(timeout, 256, 4);
  const Collected first = Run(Greedy(Prompts()[0], 6));
  EXPECT_EQ(first.ids, cold[0].ids);
  EXPECT_GE(first.last.cached_tokens, 32);
  engine_->Shutdown(0);
  engine_.reset();
  // best_effort: the request does not wait; the prefetch still fills the
  // host tier, so the same prompt a moment later hits.
  EngineOptions best = FileTier();
  best.hicache.prefetch_policy = PrefetchPolicy::kBestEffort;
  Start(best, 256, 4);
  const Collected a = Run(Greedy(Prompts()[1], 6));
  EXPECT_EQ(a.ids, cold[1].ids);
  ASSERT_TRUE(engine_->CheckIntegrity().ok());  // lets the prefetch land
  ASSERT_TRUE(engine_->FlushCache("device").ok());
  Collected b;
  for (int i = 0; i < 50; ++i) {
    b = Run(Greedy(Prompts()[1], 6));
    if (b.last.cached_tokens >= 32) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(b.ids, cold[1].ids);
  EXPECT_GE(b.last.cached_tokens, 32);
  EXPECT_FALSE(ParsePrefetchPolicy("eager").ok());
}

TEST_F(StorageTierTest, CorruptTruncatedOrForeignPagesAreMisses) {
  Start(FileTier(), 256, 4);
  const std::vector<Collected> cold = RunPrompts();
  engine_->Shutdown(0);
  engine_.reset();
  // Flip a payload byte in half the files, truncate the others.
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_path_)) {
    if (n++ % 2 == 0) {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(100);
      const int c = f.peek();
      f.seekp(100);
      f.put(static_cast<char>(c ^ 0x40));
    } else {
      std::filesystem::resize_file(e.path(), 90);
    }
  }
  Start(FileTier(), 256, 4);
  const std::vector<Collected> again = RunPrompts();
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_EQ(again[i].ids, cold[i].ids) << i;
  }
  EXPECT_GT(engine_->Stats().storage_corrupt_pages_total, 0);
  engine_->Shutdown(0);
  engine_.reset();

  // Another model's identity: nothing matches (other keys), nothing wrong.
  EngineOptions other = FileTier();
  other.hicache.model_identity = "another-model";
  Start(other, 256, 4);
  const std::vector<Collected> foreign = RunPrompts();
  for (size_t i = 0; i < foreign.size(); ++i) {
    EXPECT_EQ(foreign[i].ids, cold[i].ids) << i;
    EXPECT_EQ(foreign[i].last.cached_tokens, 0) << i;
  }
}

TEST_F(StorageTierTest, ASecondServerHitsWhatTheFirstPutInRedis) {
  ::tessera::testing::RedisServer redis;
  TSR_REQUIRE_REDIS(redis);
  Start(RedisTier(redis.url()), 256, 4);
  const std::vector<Collected> a = RunPrompts();
  engine_->Shutdown(0);
  engine_.reset();
  Start(RedisTier(redis.url()), 256, 4);
  const std::vector<Collected> b = RunPrompts();
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b[i].ids, a[i].ids) << i;
    EXPECT_GE(b[i].last.cached_tokens, 32) << i;
  }
  EXPECT_GE(engine_->Stats().storage_hit_tokens_total, 96);
}

// A node split between its backup's submission and the ack (a request
// sharing part of its prefix inserts meanwhile) keeps only its deeper half
// as the job's node; every page the job copied still reaches storage, so a
// second server finds the whole prefix (the part above the split was lost
// before: e2e HiCacheServeTest.TwoServersShareOneRedis, on a loaded machine).
TEST_F(StorageTierTest, ABackupSplitBeforeItsAckStillStoresEveryPage) {
  auto rt = model::testing::CreateRuntime();
  ASSERT_TRUE(rt.ok()) << rt.status().ToString();
  runtime::Device& device = (*rt)->device(0);
  kv::KvPoolOptions po;
  po.num_layers = 2;
  po.num_kv_heads = 2;
  po.head_dim = 4;
  po.dtype = TSR_DTYPE_F32;
  po.page_size = 2;
  po.capacity_tokens = 32;
  HiCacheOptions ho = FileTier().hicache;
  ho.ratio = 2;
  const int32_t ps = po.page_size;
  // Slots of `pages` fresh device pages, page-contiguous.
  auto slots_of = [&](kv::KvPool& pool, int64_t pages) {
    std::vector<int32_t> got, slots;
    EXPECT_TRUE(pool.AllocatePages(pages, got).ok());
    for (int32_t p : got) {
      for (int32_t j = 0; j < ps; ++j) slots.push_back(p * ps + j);
    }
    return slots;
  };
  const std::vector<int32_t> a = {5, 6, 7, 8, 9, 10, 11, 12};  // 4 pages
  const std::vector<int32_t> b = {5, 6, 7, 8, 20, 21, 22, 23};  // shares 2
  {
    auto pool = kv::KvPool::Create(device, po);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    kv::RadixCache cache({.page_size = ps});
    auto hc = HiCache::Create(device, **pool, cache, ho);
    ASSERT_TRUE(hc.ok()) << hc.status().ToString();
    std::vector<kv::RadixNode*> path;
    ASSERT_TRUE(cache.Insert(a, slots_of(**pool, 4), &path).ok());
    (*hc)->OnInserted(path);  // a's backup in flight, not acknowledged
    path.clear();
    const std::vector<int32_t> b_slots = slots_of(**pool, 4);
    auto already = cache.Insert(b, b_slots, &path);  // splits a's node
    ASSERT_TRUE(already.ok());
    EXPECT_EQ(*already, 4);
    (*hc)->OnInserted(path);
    (*hc)->Drain();
    (*hc)->DrainStorage();
    EXPECT_EQ((*hc)->Stats().storage.pages_written, 4 + 2);
    EXPECT_EQ((*hc)->Stats().transfer_failures, 0);
    ASSERT_TRUE(cache.CheckIntegrity().ok());
    ASSERT_TRUE((*hc)->CheckIntegrity().ok());
  }
  // A second server over the same storage: a's whole prefix comes back.
  auto pool = kv::KvPool::Create(device, po);
  ASSERT_TRUE(pool.ok());
  kv::RadixCache cache({.page_size = ps});
  auto hc = HiCache::Create(device, **pool, cache, ho);
  ASSERT_TRUE(hc.ok());
  EXPECT_TRUE((*hc)->StartLoad(a));  // waits for the prefetch
  (*hc)->DrainStorage();
  EXPECT_EQ(cache.MatchPrefix(a, /*record_stats=*/false).host_length, 8);
  EXPECT_EQ((*hc)->Stats().storage_hit_tokens, 8);
}

TEST_F(StorageTierTest, RequestsCompleteWhenRedisGoesAway) {
  ::tessera::testing::RedisServer redis;
  TSR_REQUIRE_REDIS(redis);
  Start(RedisTier(redis.url()), 256, 4);
  const std::vector<Collected> before = RunPrompts();
  redis.Stop(/*kill=*/true);
  ASSERT_TRUE(engine_->FlushCache("device").ok());
  ASSERT_TRUE(engine_->FlushCache("host").ok());
  std::vector<Collected> after;
  for (const auto& p : Prompts()) after.push_back(Run(Greedy(p, 6)));
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].ids, before[i].ids) << i;
    EXPECT_TRUE(after[i].last.finished) << i;
  }
  EXPECT_GT(engine_->Stats().storage_failures_total, 0);
}

}  // namespace
}  // namespace tessera::engine
