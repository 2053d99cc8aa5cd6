// The host KV tier end to end in the engine (make-model tiny checkpoint,
// cpu plugin): greedy outputs identical with HiCache on and off while the
// device pool is far smaller than the working set, prefixes evicted from
// the device served from the host, per-tier flushes, and flag validation.
#include "engine/hicache.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "engine/engine_test_fixture.h"

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

}  // namespace
}  // namespace tessera::engine
