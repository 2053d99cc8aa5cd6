#include "reference/sampling.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::reference {
namespace {

// logits = log(1..4): p = 0.1, 0.2, 0.3, 0.4; by p descending: 3, 2, 1, 0.
std::vector<double> Logits1234() {
  return {std::log(1.0), std::log(2.0), std::log(3.0), std::log(4.0)};
}

SampleRowParams With(double uniform) {
  SampleRowParams p;
  p.uniform = uniform;
  return p;
}

TEST(SamplingTest, ArgmaxTiesToLowestIndex) {
  EXPECT_EQ(ArgmaxRow(std::vector<double>{1, 5, 5, 2}), 1);
  EXPECT_EQ(ArgmaxRow(std::vector<double>{}), -1);
  SampleRowParams greedy = With(0.99);
  greedy.temperature = 0;
  EXPECT_EQ(SampleRow(std::vector<double>{1, 5, 5}, greedy), 1);
  greedy.temperature = -1;
  EXPECT_EQ(SampleRow(Logits1234(), greedy), 3);
}

TEST(SamplingTest, PlainSamplingWalksTheCdf) {
  auto logits = Logits1234();
  // CDF over (3, 2, 1, 0): 0.4, 0.7, 0.9, 1.0.
  EXPECT_EQ(SampleRow(logits, With(0.0)), 3);
  EXPECT_EQ(SampleRow(logits, With(0.39)), 3);
  EXPECT_EQ(SampleRow(logits, With(0.41)), 2);
  EXPECT_EQ(SampleRow(logits, With(0.85)), 1);
  EXPECT_EQ(SampleRow(logits, With(0.95)), 0);
  // uniform at 1 (outside [0, 1)) finds nothing above: the last kept id.
  EXPECT_EQ(SampleRow(logits, With(1.0)), 0);
  SampleTrace trace;
  SampleRow(logits, With(0.5), &trace);
  EXPECT_EQ(trace.kept, (std::vector<int64_t>{3, 2, 1, 0}));
  ASSERT_EQ(trace.cdf.size(), 4u);
  EXPECT_NEAR(trace.cdf[0], 0.4, 1e-12);
  EXPECT_NEAR(trace.cdf[1], 0.7, 1e-12);
  EXPECT_NEAR(trace.cdf[3], 1.0, 1e-12);
}

TEST(SamplingTest, TopKRenormalises) {
  auto logits = Logits1234();
  SampleRowParams p = With(0.5);  // kept (3, 2), total 0.7: target 0.35
  p.top_k = 2;
  EXPECT_EQ(SampleRow(logits, p), 3);
  p.uniform = 0.6;  // target 0.42 > 0.4
  EXPECT_EQ(SampleRow(logits, p), 2);
  p.top_k = 10;  // >= V: all
  p.uniform = 0.95;
  EXPECT_EQ(SampleRow(logits, p), 0);
}

TEST(SamplingTest, TopPKeepsTheShortestPrefixReachingIt) {
  auto logits = Logits1234();
  SampleRowParams p = With(0.99);
  p.top_p = 0.35;  // 0.4 already reaches it: only id 3
  EXPECT_EQ(SampleRow(logits, p), 3);
  p.top_p = 0.5;  // (3, 2): 0.7 >= 0.5
  EXPECT_EQ(SampleRow(logits, p), 2);
  p.top_p = 0.0;  // at least one id
  EXPECT_EQ(SampleRow(logits, p), 3);
  // top_p uses the probabilities before renormalisation, after top_k.
  p.top_k = 2;
  p.top_p = 0.8;  // the two kept ids hold 0.7 < 0.8: both stay
  EXPECT_EQ(SampleRow(logits, p), 2);
}

TEST(SamplingTest, MinPDropsRelativeToTheMax) {
  auto logits = Logits1234();
  SampleRowParams p = With(0.99);
  p.min_p = 0.6;  // threshold 0.24: keeps 0.4 and 0.3
  EXPECT_EQ(SampleRow(logits, p), 2);
  p.min_p = 0.45;  // threshold 0.18: keeps 0.4, 0.3, 0.2
  EXPECT_EQ(SampleRow(logits, p), 1);
  p.min_p = 2.0;  // above 1: only the first id stays
  EXPECT_EQ(SampleRow(logits, p), 3);
}

TEST(SamplingTest, TemperatureAndTies) {
  // temperature 2: p ~ sqrt(1..4) / 6.146 = 0.163, 0.230, 0.282, 0.325.
  SampleRowParams p = With(0.5);
  p.temperature = 2;
  EXPECT_EQ(SampleRow(Logits1234(), p), 2);  // 0.325 < 0.5 < 0.607
  // Equal logits: order by id, so uniform 0.5 lands on the middle id.
  EXPECT_EQ(SampleRow(std::vector<double>{7, 7, 7}, With(0.5)), 1);
  EXPECT_EQ(SampleRow(std::vector<double>{7, 7, 7}, With(0.1)), 0);
  p = With(0.9);
  p.top_k = 1;
  EXPECT_EQ(SampleRow(std::vector<double>{0, 3, 3}, p), 1);
}

}  // namespace
}  // namespace tessera::reference
