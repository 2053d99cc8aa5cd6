#include "engine/logit_processor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tessera::engine {
namespace {

constexpr int64_t kVocab = 6;

LogitProcessor MakeLogitProcessor(LogitParams params, std::vector<int32_t> prompt = {}) {
  auto p = LogitProcessor::Create(std::move(params), kVocab, prompt);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(p).value();
}

std::vector<float> Base() { return {2.0f, -1.0f, 0.5f, -3.0f, 0.0f, 1.0f}; }

std::vector<float> Applied(const LogitProcessor& p) {
  std::vector<float> x = Base();
  p.Apply(x);
  return x;
}

TEST(LogitProcessorTest, DefaultsChangeNothing) {
  LogitProcessor p = MakeLogitProcessor({}, {0, 1, 2});
  p.AddOutputToken(3);
  EXPECT_FALSE(p.active());
  EXPECT_EQ(Applied(p), Base());
}

TEST(LogitProcessorTest, RepetitionPenaltyOverPromptAndOutput) {
  LogitParams params;
  params.repetition_penalty = 2.0f;
  LogitProcessor p = MakeLogitProcessor(params, /*prompt=*/{0, 1, 0});
  EXPECT_TRUE(p.active());
  // Seen {0, 1}: 2 / 2 = 1; -1 * 2 = -2.
  EXPECT_EQ(Applied(p),
            (std::vector<float>{1.0f, -2.0f, 0.5f, -3.0f, 0.0f, 1.0f}));
  p.AddOutputToken(3);
  p.AddOutputToken(4);  // logit 0 stays 0
  p.AddOutputToken(3);  // a repeat is penalised once, not twice
  EXPECT_EQ(Applied(p),
            (std::vector<float>{1.0f, -2.0f, 0.5f, -6.0f, 0.0f, 1.0f}));
}

TEST(LogitProcessorTest, PresenceAndFrequencyOverOutputOnly) {
  LogitParams params;
  params.presence_penalty = 0.5f;
  params.frequency_penalty = 0.25f;
  LogitProcessor p = MakeLogitProcessor(params, /*prompt=*/{0, 5});  // prompt not counted
  EXPECT_EQ(Applied(p), Base());
  p.AddOutputToken(2);
  p.AddOutputToken(2);
  p.AddOutputToken(2);
  p.AddOutputToken(1);
  EXPECT_EQ(p.OutputCount(2), 3);
  EXPECT_EQ(p.OutputCount(1), 1);
  EXPECT_EQ(p.OutputCount(0), 0);
  // x[2] = 0.5 - (0.25*3 + 0.5) = -0.75; x[1] = -1 - (0.25 + 0.5) = -1.75.
  EXPECT_EQ(Applied(p),
            (std::vector<float>{2.0f, -1.75f, -0.75f, -3.0f, 0.0f, 1.0f}));
}

TEST(LogitProcessorTest, NegativePenaltiesEncourageRepeats) {
  LogitParams params;
  params.presence_penalty = -1.0f;
  params.frequency_penalty = -0.5f;
  LogitProcessor p = MakeLogitProcessor(params);
  p.AddOutputToken(4);
  p.AddOutputToken(4);
  // 0 - (-0.5*2 + -1) = 2.
  EXPECT_EQ(Applied(p)[4], 2.0f);
}

TEST(LogitProcessorTest, CountsAreIncrementalAcrossSteps) {
  LogitParams params;
  params.frequency_penalty = 1.0f;
  LogitProcessor p = MakeLogitProcessor(params);
  const std::vector<int32_t> generated = {5, 5, 0, 5, 3};
  std::vector<int> expected_count(kVocab, 0);
  for (int32_t id : generated) {
    p.AddOutputToken(id);
    ++expected_count[id];
    std::vector<float> x = Applied(p);
    for (int t = 0; t < kVocab; ++t) {
      EXPECT_EQ(x[t], Base()[t] - static_cast<float>(expected_count[t]))
          << "token " << t << " after " << p.output_len() << " steps";
    }
  }
  EXPECT_EQ(p.output_len(), 5);
  // Apply does not change state: applying twice gives the same row.
  EXPECT_EQ(Applied(p), Applied(p));
}

TEST(LogitProcessorTest, LogitBiasAddsAndDuplicatesSum) {
  LogitParams params;
  params.logit_bias = {{1, 5.0f}, {4, -100.0f}, {1, 0.5f}};
  LogitProcessor p = MakeLogitProcessor(params);
  EXPECT_TRUE(p.active());
  EXPECT_EQ(Applied(p),
            (std::vector<float>{2.0f, 4.5f, 0.5f, -3.0f, -100.0f, 1.0f}));
}

TEST(LogitProcessorTest, CombinationOrderBiasThenRepetitionThenPresence) {
  // Documented order: bias, repetition, presence/frequency, min_tokens.
  LogitParams params;
  params.logit_bias = {{0, 2.0f}, {3, 1.0f}};
  params.repetition_penalty = 2.0f;
  params.presence_penalty = 1.0f;
  params.frequency_penalty = 0.5f;
  LogitProcessor p = MakeLogitProcessor(params, /*prompt=*/{3});
  p.AddOutputToken(0);
  p.AddOutputToken(0);
  std::vector<float> x = Applied(p);
  // Token 0: (2 + 2) / 2 - (0.5*2 + 1) = 0.
  EXPECT_EQ(x[0], 0.0f);
  // Token 3 (prompt only): (-3 + 1) * 2 = -4; no presence (not generated).
  EXPECT_EQ(x[3], -4.0f);
  // Had repetition come before bias, token 0 would be 2/2 + 2 - 2 = 1.
  EXPECT_NE(x[0], 1.0f);
}

TEST(LogitProcessorTest, MinTokensMasksStopIdsUntilReached) {
  LogitParams params;
  params.min_tokens = 2;
  params.min_tokens_stop_ids = {5, 2};
  params.logit_bias = {{5, 100.0f}};  // cannot undo the mask
  LogitProcessor p = MakeLogitProcessor(params);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = Applied(p);
  EXPECT_EQ(x[5], -inf);
  EXPECT_EQ(x[2], -inf);
  EXPECT_EQ(x[0], 2.0f);
  p.AddOutputToken(0);
  EXPECT_EQ(Applied(p)[5], -inf);
  p.AddOutputToken(1);
  x = Applied(p);
  EXPECT_EQ(x[5], 101.0f);
  EXPECT_EQ(x[2], 0.5f);
}

TEST(LogitProcessorTest, MinTokensAloneIsInactiveOnceReached) {
  LogitParams params;
  params.min_tokens = 1;
  params.min_tokens_stop_ids = {5};
  LogitProcessor p = MakeLogitProcessor(params);
  EXPECT_TRUE(p.active());
  p.AddOutputToken(0);
  EXPECT_FALSE(p.active());
}

TEST(LogitProcessorTest, ValidationNamesTheProblem) {
  auto expect_error = [](LogitParams params, const std::string& needle) {
    Status s = ValidateLogitParams(params, kVocab);
    ASSERT_FALSE(s.ok()) << needle;
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  LogitParams p;
  p.logit_bias = {{1, 1.0f}, {6, 1.0f}};
  expect_error(p, "token id 6");
  p.logit_bias = {{-3, 1.0f}};
  expect_error(p, "token id -3");
  p.logit_bias = {{2, 150.0f}};
  expect_error(p, "token id 2");
  p.logit_bias = {{2, std::nanf("")}};
  expect_error(p, "logit_bias");
  p = {};
  p.repetition_penalty = 0.0f;
  expect_error(p, "repetition_penalty");
  p = {};
  p.presence_penalty = 2.5f;
  expect_error(p, "presence_penalty");
  p = {};
  p.frequency_penalty = std::nanf("");
  expect_error(p, "frequency_penalty");
  p = {};
  p.min_tokens = -1;
  expect_error(p, "min_tokens");
  p = {};
  p.min_tokens_stop_ids = {99};
  expect_error(p, "stop token id 99");
  EXPECT_TRUE(ValidateLogitParams({}, kVocab).ok());

  const std::vector<int32_t> prompt = {0, 7};
  auto bad_prompt = LogitProcessor::Create({}, kVocab, prompt);
  ASSERT_FALSE(bad_prompt.ok());
  EXPECT_NE(bad_prompt.status().message().find("prompt token 7"),
            std::string::npos);
}

TEST(LogitProcessorTest, BatchAppliesPerRowAndChecksShape) {
  LogitParams a;
  a.logit_bias = {{0, 1.0f}};
  LogitParams b;
  b.logit_bias = {{5, -1.0f}};
  LogitProcessor pa = MakeLogitProcessor(a);
  LogitProcessor pb = MakeLogitProcessor(b);
  std::vector<float> logits;  // F32 [3, V]
  for (int r = 0; r < 3; ++r) {
    for (float v : Base()) logits.push_back(v);
  }
  const std::vector<const LogitProcessor*> rows = {&pa, nullptr, &pb};
  ASSERT_TRUE(ApplyLogitProcessors(logits, kVocab, rows).ok());
  EXPECT_EQ(logits[0], 3.0f);
  EXPECT_EQ(logits[kVocab + 0], 2.0f);  // null row untouched
  EXPECT_EQ(logits[2 * kVocab + 5], 0.0f);
  EXPECT_EQ(logits[5], 1.0f);

  std::vector<float> short_logits(2 * kVocab);
  Status s = ApplyLogitProcessors(short_logits, kVocab, rows);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("3 rows"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tessera::engine
