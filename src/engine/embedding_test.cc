// The engine as an embedding server (EngineOptions::pooling): prompts are
// pooled from the final hidden states, batched, chunked and (last-token
// pooling) served from the radix cache, and every vector matches the
// float64 reference forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/engine_test_fixture.h"
#include "model/reference_forward.h"

namespace tessera::engine {
namespace {

using testing::Collect;
using testing::EngineTest;
using ::tessera::testing::ReferenceModel;

class EmbeddingEngineTest : public EngineTest {
 protected:
  // The reference's pooled (and normalized) vector for `prompt`.
  std::vector<double> Want(const std::vector<int32_t>& prompt,
                           const model::PoolingConfig& pooling) {
    if (reference_ == nullptr) {
      auto ref = ReferenceModel::Load(*checkpoint_);
      EXPECT_TRUE(ref.ok()) << ref.status().ToString();
      if (!ref.ok()) return {};
      reference_ = std::move(ref).value();
    }
    ReferenceModel::Cache cache = reference_->NewCache();
    auto hidden = reference_->ForwardHidden(cache, prompt);
    std::vector<double> v(hidden[0].size(), 0.0);
    switch (pooling.mode) {
      case model::PoolingMode::kLast:
        v = hidden.back();
        break;
      case model::PoolingMode::kCls:
        v = hidden.front();
        break;
      case model::PoolingMode::kMean:
        for (const auto& row : hidden) {
          for (size_t i = 0; i < v.size(); ++i) v[i] += row[i] / hidden.size();
        }
        break;
    }
    if (pooling.normalize) {
      double n = 0;
      for (double x : v) n += x * x;
      for (double& x : v) x /= std::sqrt(n);
    }
    return v;
  }

  void ExpectMatches(const RequestOutput& got, const std::vector<double>& want,
                     const char* what) {
    ASSERT_TRUE(got.finished) << what;
    EXPECT_EQ(got.finish.kind, FinishReason::Kind::kStop) << what;
    ASSERT_EQ(got.embedding.size(), want.size()) << what;
    double max_err = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_err = std::max(max_err, std::abs(got.embedding[i] - want[i]));
      scale = std::max(scale, std::abs(want[i]));
    }
    EXPECT_LE(max_err, 1e-4 * scale) << what;
  }

  std::unique_ptr<ReferenceModel> reference_;
};

TEST_F(EmbeddingEngineTest, LastTokenPoolingBatchedChunkedAndCached) {
  EngineOptions options;
  options.pooling = model::PoolingConfig{model::PoolingMode::kLast, true};
  options.chunked_prefill_size = 8;  // the 21-token prompt takes 3 steps
  Start(options);
  const std::vector<int32_t> a = Prompt(21, 1);
  std::vector<int32_t> b = Prompt(12, 2);
  std::vector<int32_t> b2 = b;  // b's first 12 tokens, then 3 more
  b2.insert(b2.end(), {7, 8, 9});
  const std::vector<int32_t> c = Prompt(3, 3);
  auto sa = engine_->Submit(Greedy(a, 1));
  auto sb = engine_->Submit(Greedy(b, 1));
  auto sc = engine_->Submit(Greedy(c, 1));
  ASSERT_TRUE(sa.ok() && sb.ok() && sc.ok());
  const auto& pooling = *options.pooling;
  ExpectMatches(Collect(**sa).last, Want(a, pooling), "a");
  ExpectMatches(Collect(**sb).last, Want(b, pooling), "b");
  ExpectMatches(Collect(**sc).last, Want(c, pooling), "c");
  // b2 starts with b: its cached pages are reused.
  testing::Collected r = Run(Greedy(b2, 1));
  ExpectMatches(r.last, Want(b2, pooling), "b2");
  EXPECT_GE(r.last.cached_tokens, 8);
  EXPECT_TRUE(r.ids.empty());
  EXPECT_EQ(r.last.prompt_tokens, 15);
  EXPECT_EQ(r.last.completion_tokens, 0);
  // The same prompt again: all but its last token from the cache.
  testing::Collected again = Run(Greedy(a, 1));
  ExpectMatches(again.last, Want(a, pooling), "a again");
  EXPECT_EQ(engine_->Stats().generation_tokens_total, 0);
}

TEST_F(EmbeddingEngineTest, MeanPoolingSeesEveryTokenAcrossChunks) {
  EngineOptions options;
  options.pooling = model::PoolingConfig{model::PoolingMode::kMean, false};
  options.chunked_prefill_size = 8;
  Start(options);
  const std::vector<int32_t> a = Prompt(19, 4);
  ExpectMatches(Run(Greedy(a, 1)).last, Want(a, *options.pooling), "a");
  // Again: no prefix reuse (a cached prefix has no hidden states).
  testing::Collected again = Run(Greedy(a, 1));
  ExpectMatches(again.last, Want(a, *options.pooling), "a again");
  EXPECT_EQ(again.last.cached_tokens, 0);
}

TEST_F(EmbeddingEngineTest, ClsPoolingTakesTheFirstToken) {
  EngineOptions options;
  options.pooling = model::PoolingConfig{model::PoolingMode::kCls, true};
  options.chunked_prefill_size = 8;
  Start(options);
  const std::vector<int32_t> a = Prompt(10, 5);
  ExpectMatches(Run(Greedy(a, 1)).last, Want(a, *options.pooling), "a");
}

}  // namespace
}  // namespace tessera::engine
