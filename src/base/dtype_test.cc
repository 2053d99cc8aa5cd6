#include "base/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera {
namespace {

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(DTypeSize(TSR_DTYPE_F32), 4u);
  EXPECT_EQ(DTypeSize(TSR_DTYPE_BF16), 2u);
  EXPECT_EQ(DTypeSize(TSR_DTYPE_I64), 8u);
  EXPECT_EQ(DTypeName(TSR_DTYPE_BF16), "bf16");
  EXPECT_EQ(ParseDType("bfloat16"), TSR_DTYPE_BF16);
  EXPECT_FALSE(ParseDType("f8").has_value());
}

TEST(DTypeTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties to even (1.0).
  EXPECT_EQ(FloatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 is halfway too: ties to even (1 + 2^-6).
  EXPECT_EQ(FloatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(
      FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(Bf16ToFloat(FloatToBf16(-2.5f)), -2.5f);
}

TEST(DTypeTest, F16RoundTripsAndRounds) {
  for (float v : {0.0f, 1.0f, -1.5f, 65504.0f, 6.1035156e-05f, 5.96e-08f}) {
    EXPECT_EQ(F16ToFloat(FloatToF16(v)), v == 5.96e-08f ? F16ToFloat(1) : v)
        << v;
  }
  EXPECT_EQ(FloatToF16(1.0f), 0x3c00);
  EXPECT_EQ(FloatToF16(70000.0f), 0x7c00);  // overflow -> inf
  EXPECT_EQ(FloatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_TRUE(std::isnan(F16ToFloat(FloatToF16(NAN))));
}

TEST(DTypeTest, LoadStoreDouble) {
  uint16_t bf[2] = {0, 0};
  StoreFromDouble(bf, TSR_DTYPE_BF16, 1, 3.0);
  EXPECT_EQ(LoadAsDouble(bf, TSR_DTYPE_BF16, 1), 3.0);
  int32_t ids[1];
  StoreFromDouble(ids, TSR_DTYPE_I32, 0, 42.0);
  EXPECT_EQ(ids[0], 42);
}

}  // namespace
}  // namespace tessera
