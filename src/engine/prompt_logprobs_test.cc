// Prompt logprobs (EngineRequest::prompt_logprobs): every prompt token's
// log-probability given the ones before it, across chunked prefill, with a
// cached prefix present, next to ordinary requests in the batch, and with
// max_new_tokens 0 (score only) — against the float64 reference.
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

class PromptLogprobsTest : public EngineTest {
 protected:
  // log p(prompt[p + 1] | prompt[..p]) for p = 0 .. L-2.
  std::vector<double> Want(const std::vector<int32_t>& prompt) {
    auto ref = ReferenceModel::Load(*checkpoint_);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    auto cache = (*ref)->NewCache();
    auto logits = (*ref)->Forward(cache, prompt);
    std::vector<double> out;
    for (size_t p = 0; p + 1 < prompt.size(); ++p) {
      double max = -INFINITY, sum = 0;
      for (double x : logits[p]) max = std::max(max, x);
      for (double x : logits[p]) sum += std::exp(x - max);
      out.push_back(logits[p][prompt[p + 1]] - max - std::log(sum));
    }
    return out;
  }

  static void ExpectScores(const RequestOutput& first,
                           const std::vector<int32_t>& prompt,
                           const std::vector<double>& want, int top) {
    ASSERT_EQ(first.prompt_logprobs.size(), prompt.size() - 1);
    for (size_t p = 0; p + 1 < prompt.size(); ++p) {
      const TokenLogprobs& lp = first.prompt_logprobs[p];
      EXPECT_EQ(lp.id, prompt[p + 1]) << p;
      EXPECT_NEAR(lp.logprob, want[p], 1e-4) << p;
      EXPECT_EQ(static_cast<int>(lp.top.size()), top) << p;
      if (!lp.top.empty()) EXPECT_GE(lp.top[0].second, lp.logprob - 1e-6);
    }
  }
};

TEST_F(PromptLogprobsTest, ScoresEveryPromptTokenAcrossChunksAndCache) {
  EngineOptions options;
  options.chunked_prefill_size = 8;
  Start(options);
  const std::vector<int32_t> prompt = Prompt(21, 3);
  const std::vector<double> want = Want(prompt);
  // The prompt is in the radix cache first: scoring must not reuse it.
  Run(Greedy(prompt, 2));
  EngineRequest scored = Greedy(prompt, 3);
  scored.prompt_logprobs = 2;
  scored.top_logprobs = 1;
  // An ordinary request in the same steps.
  auto other = engine_->Submit(Greedy(Prompt(9, 4), 4));
  auto stream = engine_->Submit(std::move(scored));
  ASSERT_TRUE(stream.ok() && other.ok());
  RequestOutput first;
  int outputs = 0;
  int64_t tokens = 0;
  while (true) {
    bool done = false;
    for (RequestOutput& o : (*stream)->Wait(std::chrono::milliseconds(200))) {
      if (outputs++ == 0) first = o;
      else EXPECT_TRUE(o.prompt_logprobs.empty());
      tokens += static_cast<int64_t>(o.token_ids.size());
      EXPECT_EQ(o.logprobs.size(), o.token_ids.size());
      done = done || o.finished;
    }
    if (done) break;
  }
  EXPECT_EQ(tokens, 3);
  EXPECT_EQ(first.cached_tokens, 0);
  ExpectScores(first, prompt, want, 2);
  EXPECT_EQ(Collect(**other).ids.size(), 4u);
}

// A scored prompt admitted behind another in the same step gets what is
// left of the token budget — here a one-token first chunk — and still
// scores every position.
TEST_F(PromptLogprobsTest, AOneTokenChunkIsScoredToo) {
  EngineOptions options;
  options.chunked_prefill_size = 8;
  Start(options);
  const std::vector<int32_t> scored_prompt = Prompt(12, 7);
  const std::vector<double> want = Want(scored_prompt);
  EngineRequest scored = Greedy(scored_prompt, 1);
  scored.prompt_logprobs = 0;
  auto first = engine_->Submit(Greedy(Prompt(7, 8), 2));
  auto second = engine_->Submit(std::move(scored));
  ASSERT_TRUE(first.ok() && second.ok());
  Collect(**first);
  testing::Collected c = Collect(**second);
  // Collect keeps the last output; the scores came with the first (and
  // only, for one token) output.
  ExpectScores(c.last, scored_prompt, want, 0);
}

TEST_F(PromptLogprobsTest, MaxNewTokensZeroScoresOnly) {
  Start();
  const std::vector<int32_t> prompt = Prompt(12, 5);
  EngineRequest r = Greedy(prompt, 0);
  r.prompt_logprobs = 0;
  testing::Collected c = Run(std::move(r));
  EXPECT_TRUE(c.ids.empty());
  EXPECT_EQ(c.last.finish.kind, FinishReason::Kind::kLength);
  EXPECT_EQ(c.last.completion_tokens, 0);
  ExpectScores(c.last, prompt, Want(prompt), 0);
  // Without prompt logprobs, 0 stays an error.
  auto refused = engine_->Submit(Greedy(prompt, 0));
  EXPECT_FALSE(refused.ok());
}

}  // namespace
}  // namespace tessera::engine
