// The plugin's own bf16/f16 conversions (half.h) against the host's
// independent ones (base/dtype.h): every 16-bit pattern, and a sweep of f32
// values including ties, subnormals, overflow and NaN.
#include "half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "base/dtype.h"

namespace tessera::plugin_kit {
namespace {

TEST(HalfTest, EverySixteenBitPatternWidensLikeTheHost) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float mine = F16ToF32(bits), host = tessera::F16ToFloat(bits);
    if (std::isnan(host)) {
      EXPECT_TRUE(std::isnan(mine)) << std::hex << h;
    } else {
      EXPECT_EQ(FloatBits(mine), FloatBits(host)) << std::hex << h;
    }
    const float b_mine = Bf16ToF32(bits), b_host = tessera::Bf16ToFloat(bits);
    if (!std::isnan(b_host)) {
      EXPECT_EQ(FloatBits(b_mine), FloatBits(b_host)) << std::hex << h;
    }
  }
}

TEST(HalfTest, NarrowingRoundsToNearestEvenLikeTheHost) {
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 1.00390625f, 1.01171875f, 65504.0f, 65519.0f,
                               65520.0f, 1e-8f, 2.98023224e-8f, 5.96046448e-8f, 6.1e-5f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(), 3e38f, -1e-40f};
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) values.push_back(BitsFloat(any(rng)));
  for (float v : values) {
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(v))));
      EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(v))));
      continue;
    }
    EXPECT_EQ(F32ToF16(v), tessera::FloatToF16(v)) << v;
    EXPECT_EQ(F32ToBf16(v), tessera::FloatToBf16(v)) << v;
  }
}

}  // namespace
}  // namespace tessera::plugin_kit
