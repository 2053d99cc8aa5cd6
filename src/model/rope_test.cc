#include "model/rope.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tessera::model {
namespace {

constexpr double kPi = 3.14159265358979323846;

TEST(RopeTest, DefaultFrequencies) {
  RopeScaling none;
  std::vector<double> f = ComputeRopeInvFreq(8, 10000.0, none);
  ASSERT_EQ(f.size(), 4u);
  // theta^(-2i/d) written as exp(-ln(theta) * 2i / d).
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(f[i], std::exp(-std::log(10000.0) * 2.0 * i / 8.0), 1e-15);
  }
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_NEAR(f[2], 0.01, 1e-15);  // 10000^(-1/2)
}

TEST(RopeTest, Llama3ScalingMatchesAnIndependentComputation) {
  // Llama 3.1 8B: theta 500000, head_dim 128, factor 8, low 1, high 4,
  // original context 8192.
  RopeScaling s;
  s.type = RopeScaling::Type::kLlama3;
  s.factor = 8;
  s.low_freq_factor = 1;
  s.high_freq_factor = 4;
  s.original_max_position_embeddings = 8192;
  std::vector<double> f = ComputeRopeInvFreq(128, 500000.0, s);
  ASSERT_EQ(f.size(), 64u);

  // Written from the definition in a different form: by the number of
  // rotations a dimension makes over the original context,
  // r = context * freq / (2 pi). Few rotations (r < low) -> divided by the
  // factor; many (r > high) -> unchanged; in between, a linear blend in r.
  for (int i = 0; i < 64; ++i) {
    double base = std::pow(500000.0, -double(2 * i) / 128.0);
    double r = 8192.0 * base / (2 * kPi);
    double expected;
    if (r < 1.0) {
      expected = base / 8.0;
    } else if (r > 4.0) {
      expected = base;
    } else {
      double t = (r - 1.0) / 3.0;
      expected = base * (t + (1.0 - t) / 8.0);
    }
    EXPECT_NEAR(f[i], expected, 1e-12 * std::max(1.0, expected)) << i;
    EXPECT_NEAR(f[i] / expected, 1.0, 1e-12) << i;
  }
  // Spot values computed with Python (math.pow in double precision).
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  EXPECT_NEAR(f[20], 0.016560440080994446, 1e-17);
  EXPECT_NEAR(f[30], 0.0013718935677611381, 1e-18);
  EXPECT_NEAR(f[40], 3.428102195952591e-05, 1e-19);
  EXPECT_NEAR(f[63], 3.068925988914511e-07, 1e-21);
  // Frequencies stay strictly decreasing through the blend.
  for (int i = 1; i < 64; ++i) EXPECT_LT(f[i], f[i - 1]) << i;
}

TEST(RopeTest, ModelConfigUsesHeadDim) {
  ModelConfig c;
  c.head_dim = 16;
  c.rope_theta = 1e6;
  std::vector<float> f = RopeInvFreq(c);
  ASSERT_EQ(f.size(), 8u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[4], float(std::pow(1e6, -0.5)));
}

}  // namespace
}  // namespace tessera::model
