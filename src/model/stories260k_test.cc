// The real stories260k Llama (../shared/models/stories260k) against its
// golden greedy continuations from an independent float64 reference:
// prefill the prompt, then greedy-decode one token at a time through the
// paged KV cache (pages of 16, so several are crossed), alone and with all
// prompts in one batch. Also reports decode throughput.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/model_runner.h"
#include "model/reference_forward.h"
#include "model/runner_test_util.h"
#include "model/sampler.h"
#include "testing/fixtures.h"

namespace tessera::model {
namespace {

using testing::CreateRuntime;

struct GoldenCase {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> greedy_output_ids;
  int64_t stable_prefix = 0;
  std::vector<int32_t> top5_ids;
  std::vector<double> top5_logits;
};

std::vector<GoldenCase> LoadGolden(const std::string& path) {
  std::vector<GoldenCase> cases;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    GoldenCase c;
    c.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    c.greedy_output_ids = j.at("greedy_output_ids").get<std::vector<int32_t>>();
    c.stable_prefix = j.at("stable_prefix").get<int64_t>();
    c.top5_ids = j.at("first_step_top5_ids").get<std::vector<int32_t>>();
    c.top5_logits = j.at("first_step_top5_logits").get<std::vector<double>>();
    cases.push_back(std::move(c));
  }
  return cases;
}

constexpr int kSteps = 64;

class Stories260kTest : public ::testing::Test {
 protected:
  void Load(const std::string& dir) {
    auto ckpt = Checkpoint::Open(dir);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
    checkpoint_ = std::move(ckpt).value();
    auto rt = CreateRuntime();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
    ModelRunnerOptions options;
    options.page_size = 16;
    options.kv_capacity_tokens = 2048;
    auto runner = ModelRunner::Create(*runtime_, *checkpoint_, options);
    ASSERT_TRUE(runner.ok()) << runner.status().ToString();
    runner_ = std::move(runner).value();
    ASSERT_EQ(runner_->activation_dtype(), TSR_DTYPE_F32);
    sampler_ = std::make_unique<Sampler>(*runtime_, runner_->device(),
                                         runner_->stream());
  }

  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<Sampler> sampler_;
};

TEST_F(Stories260kTest, GreedyDecodeMatchesGoldenOneSequenceAtATime) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  Load(dir);
  const std::vector<GoldenCase> cases = LoadGolden(golden);
  ASSERT_FALSE(cases.empty());
  kv::KvPool& pool = runner_->kv_pool();
  double decode_seconds = 0.0;
  int64_t decode_tokens = 0;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const GoldenCase& c = cases[ci];
    std::vector<int32_t> pages;
    ASSERT_TRUE(pool.EnsureCapacity(pages, c.prompt_ids.size()).ok());
    auto first = runner_->Forward(Batch{{{c.prompt_ids, 0, pages}}});
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    // First step: the top 5 ids and their logits.
    std::vector<int32_t> order(first->vocab);
    for (int32_t i = 0; i < first->vocab; ++i) order[i] = i;
    auto row = first->Row(0);
    std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                      [&](int32_t a, int32_t b) {
                        return row[a] > row[b] || (row[a] == row[b] && a < b);
                      });
    for (int k = 0; k < 5; ++k) {
      EXPECT_EQ(order[k], c.top5_ids[k]) << "case " << ci << " rank " << k;
      EXPECT_NEAR(row[c.top5_ids[k]], c.top5_logits[k], 1e-3)
          << "case " << ci << " rank " << k;
    }
    std::vector<int32_t> generated = {testing::ArgmaxRow(row)};
    const std::vector<SampleRow> greedy(1);
    const auto start = std::chrono::steady_clock::now();
    for (int step = 1; step < kSteps; ++step) {
      const int64_t cached = int64_t(c.prompt_ids.size()) + step - 1;
      ASSERT_TRUE(pool.EnsureCapacity(pages, cached + 1).ok());
      const std::vector<int32_t> token = {generated.back()};
      auto logits = runner_->ForwardOnDevice(Batch{{{token, cached, pages}}});
      ASSERT_TRUE(logits.ok()) << logits.status().ToString();
      auto ids = sampler_->Sample(*logits, greedy);
      ASSERT_TRUE(ids.ok()) << ids.status().ToString();
      generated.push_back((*ids)[0]);
    }
    decode_seconds += std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    decode_tokens += kSteps - 1;
    EXPECT_GT(pages.size(), 4u);  // several pages crossed
    for (int64_t i = 0; i < c.stable_prefix; ++i) {
      ASSERT_EQ(generated[i], c.greedy_output_ids[i])
          << "case " << ci << " step " << i;
    }
    ASSERT_TRUE(pool.Release(pages).ok());
  }
  EXPECT_EQ(pool.num_used_pages(), 0);
  const double tps = decode_tokens / decode_seconds;
  RecordProperty("decode_tokens_per_second", std::to_string(tps));
  std::printf("stories260k batch-1 decode: %lld tokens in %.3f s = %.0f tok/s\n",
              static_cast<long long>(decode_tokens), decode_seconds, tps);
}

TEST_F(Stories260kTest, AllPromptsInOneBatchGiveTheSameTokens) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  Load(dir);
  const std::vector<GoldenCase> cases = LoadGolden(golden);
  const size_t n = cases.size();
  ASSERT_GT(n, 1u);
  kv::KvPool& pool = runner_->kv_pool();
  std::vector<std::vector<int32_t>> pages(n), generated(n);
  std::vector<int64_t> cached(n, 0);
  std::vector<std::vector<int32_t>> inputs(n);
  for (size_t i = 0; i < n; ++i) inputs[i] = cases[i].prompt_ids;
  const std::vector<SampleRow> greedy(n);
  double decode_seconds = 0.0;
  for (int step = 0; step < kSteps; ++step) {
    Batch batch;
    for (size_t i = 0; i < n; ++i) {
      ASSERT_TRUE(
          pool.EnsureCapacity(pages[i], cached[i] + int64_t(inputs[i].size()))
              .ok());
      batch.sequences.push_back({inputs[i], cached[i], pages[i]});
    }
    const auto start = std::chrono::steady_clock::now();
    auto logits = runner_->ForwardOnDevice(batch);
    ASSERT_TRUE(logits.ok()) << logits.status().ToString();
    auto ids = sampler_->Sample(*logits, greedy);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    if (step > 0) {
      decode_seconds += std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    }
    for (size_t i = 0; i < n; ++i) {
      cached[i] += int64_t(inputs[i].size());
      generated[i].push_back((*ids)[i]);
      inputs[i] = {(*ids)[i]};
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (int64_t s = 0; s < cases[i].stable_prefix; ++s) {
      ASSERT_EQ(generated[i][s], cases[i].greedy_output_ids[s])
          << "case " << i << " step " << s;
    }
  }
  const double tps = double(n) * (kSteps - 1) / decode_seconds;
  RecordProperty("batched_decode_tokens_per_second", std::to_string(tps));
  std::printf("stories260k batch-%zu decode: %.0f tok/s\n", n, tps);
}

// The oracle the synthetic-model tests trust, checked against the golden
// file's independent float64 reference: first-step top-5 logits and the
// first greedy tokens.
TEST(Stories260kReferenceTest, ReferenceForwardMatchesGolden) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  auto ckpt = Checkpoint::Open(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
  auto ref = ::tessera::testing::ReferenceModel::Load(**ckpt);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  const GoldenCase c = LoadGolden(golden).at(0);
  auto cache = (*ref)->NewCache();
  auto logits = (*ref)->Forward(cache, c.prompt_ids);
  for (int k = 0; k < 5; ++k) {
    EXPECT_NEAR(logits.back()[c.top5_ids[k]], c.top5_logits[k], 1e-4);
  }
  for (int step = 0; step < 8 && step < c.stable_prefix; ++step) {
    const auto& row = logits.back();
    const int32_t next = static_cast<int32_t>(
        std::max_element(row.begin(), row.end()) - row.begin());
    ASSERT_EQ(next, c.greedy_output_ids[step]) << "step " << step;
    logits = (*ref)->Forward(cache, std::vector<int32_t>{next});
  }
}

}  // namespace
}  // namespace tessera::model
