// The int8 quantiser: exact on representable rows, error within half a
// scale step, scales from the group's largest magnitude, zero groups,
// and the group-size choice (fallback to per channel). The 4-bit one: Q4_0
// blocks (as llama.cpp writes them: f16 scale, the largest magnitude at
// nibble 0) come back bit for bit, the packing is linear v4's, and random
// rows stay within half a step.
#include "model/quantize.h"

#include "base/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tessera::model {
namespace {

TEST(QuantizeTest, GroupFallsBackToPerChannel) {
  EXPECT_EQ(Int8GroupFor(1024, 32), 32);
  EXPECT_EQ(Int8GroupFor(172, 32), 172);  // 32 does not divide 172
  EXPECT_EQ(Int8GroupFor(96, 0), 96);     // 0: per channel
  EXPECT_EQ(Int8GroupFor(96, -1), 96);
  EXPECT_EQ(Int8GroupFor(0, 32), 1);
}

TEST(QuantizeTest, ScaleIsGroupMaxOver127AndValuesRoundTrip) {
  // Two rows of two groups of 4.
  const std::vector<float> w = {0.5f, -1.27f, 0.0f, 0.01f,  2.54f, 1.27f, -2.54f, 0.0f,
                                0.0f, 0.0f,   0.0f, 0.0f,   -3.0f, 1.5f,  0.75f,  0.0f};
  std::vector<int8_t> q(16);
  std::vector<float> s(4);
  QuantizeInt8Rows(w.data(), 2, 8, 4, q.data(), s.data());
  EXPECT_FLOAT_EQ(s[0], 1.27f / 127.0f);
  EXPECT_FLOAT_EQ(s[1], 2.54f / 127.0f);
  EXPECT_FLOAT_EQ(s[2], 1.0f);  // an all-zero group
  EXPECT_FLOAT_EQ(s[3], 3.0f / 127.0f);
  EXPECT_EQ(q[1], -127);
  EXPECT_EQ(q[4], 127);
  EXPECT_EQ(q[6], -127);
  EXPECT_NEAR(q[5], 63.5, 0.5);  // 1.27 / 0.02 = 63.5 (rounding either way)
  EXPECT_EQ(q[12], -127);
  for (int i = 8; i < 12; ++i) EXPECT_EQ(q[i], 0);
  for (int i = 0; i < 16; ++i) {
    EXPECT_NEAR(q[i] * s[i / 4], w[i], s[i / 4] / 2 + 1e-7) << i;
  }
}

TEST(QuantizeTest, ErrorBoundOnRandomRowsPerGroupAndPerChannel) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  const int64_t rows = 5, k = 128;
  std::vector<float> w(rows * k);
  for (float& v : w) v = dist(rng);
  for (int64_t group : {32, 128}) {
    std::vector<int8_t> q(rows * k);
    std::vector<float> s(rows * (k / group));
    QuantizeInt8Rows(w.data(), rows, k, group, q.data(), s.data());
    double err2 = 0, ref2 = 0;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < k; ++i) {
        const float scale = s[r * (k / group) + i / group];
        const float back = q[r * k + i] * scale;
        ASSERT_LE(std::fabs(back - w[r * k + i]), scale / 2 + 1e-8);
        err2 += (back - w[r * k + i]) * (back - w[r * k + i]);
        ref2 += w[r * k + i] * w[r * k + i];
      }
    }
    // 8-bit symmetric: relative RMS error well under 1%.
    EXPECT_LT(std::sqrt(err2 / ref2), 0.01) << "group " << group;
  }
}

// Weight i of a packed 4-bit row: nibble - 8 (linear v4's layout).
int Nibble(const std::vector<uint8_t>& packed, int64_t row_bytes, int64_t r, int64_t i) {
  const uint8_t byte = packed[r * row_bytes + (i / 32) * 16 + i % 16];
  return i % 32 < 16 ? byte & 15 : byte >> 4;
}

TEST(QuantizeTest, Int4GivesBackQ4_0BlocksExactly) {
  // Blocks as llama.cpp's Q4_0 quantiser leaves them: a scale d (f16), the
  // largest |w| at nibble 0 (w = -8 d), other nibbles anything.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> nib(0, 15);
  const int64_t rows = 3, k = 128, groups = k / kInt4GroupSize;
  const float ds[] = {0.0125f, -0.5f, 3.0517578e-05f, 0.0f, 1.5f, -0.0009765625f};
  std::vector<int> want(rows * k);
  std::vector<uint16_t> want_s(rows * groups);
  std::vector<float> w(rows * k);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float d = F16ToFloat(FloatToF16(ds[(r * groups + g) % 6]));  // as stored
      want_s[r * groups + g] = FloatToF16(d == 0.0f ? 1.0f : d);
      for (int64_t i = 0; i < kInt4GroupSize; ++i) {
        const int64_t at = r * k + g * kInt4GroupSize + i;
        want[at] = d == 0.0f ? 8 : (i == 7 ? 0 : nib(rng));
        w[at] = static_cast<float>(want[at] - 8) * d;
      }
    }
  }
  std::vector<uint8_t> packed(rows * k / 2);
  std::vector<uint16_t> s(rows * groups);
  QuantizeInt4Rows(w.data(), rows, k, packed.data(), s.data());
  EXPECT_EQ(s, want_s);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) {
      ASSERT_EQ(Nibble(packed, k / 2, r, i), want[r * k + i]) << "row " << r << " k " << i;
    }
  }
}

TEST(QuantizeTest, Int4ErrorBoundOnRandomRows) {
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  const int64_t rows = 4, k = 256, groups = k / kInt4GroupSize;
  std::vector<float> w(rows * k);
  for (float& v : w) v = dist(rng);
  std::vector<uint8_t> packed(rows * k / 2);
  std::vector<uint16_t> s(rows * groups);
  QuantizeInt4Rows(w.data(), rows, k, packed.data(), s.data());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) {
      const float scale = F16ToFloat(s[r * groups + i / kInt4GroupSize]);
      const float back = static_cast<float>(Nibble(packed, k / 2, r, i) - 8) * scale;
      // Half a step, except values past +7 steps, which clamp to 7.
      EXPECT_LE(std::fabs(back - w[r * k + i]), std::fabs(scale) * 1.0001f)
          << "row " << r << " k " << i;
    }
  }
}

}  // namespace
}  // namespace tessera::model
