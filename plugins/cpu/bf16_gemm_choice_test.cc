// bf16_gemm_choice.h called directly: the option's values per path, and
// `auto`'s measurement on a CPU with AVX512_BF16 (a ratio of two register
// loops: positive, repeatable to within a factor that cannot flip a choice
// between chips whose ratios are 0.5 and 2, and the choice it implies).
#include "bf16_gemm_choice.h"

#include <gtest/gtest.h>

namespace tessera::cpu {
namespace {

TEST(Bf16GemmChoiceTest, ForcedValuesAndOtherPaths) {
  Bf16GemmChoice c;
  ASSERT_TRUE(ResolveBf16Gemm("f32", CpuIsa::kScalar, &c).ok());
  EXPECT_EQ(c.gemm, Bf16Gemm::kF32Fma);
  EXPECT_EQ(c.dpbf16_over_fma, 0);
  // A path without a bf16 x bf16 kernel: auto measures nothing.
  for (const char* value : {"", "auto"}) {
    ASSERT_TRUE(ResolveBf16Gemm(value, CpuIsa::kAvx512, &c).ok());
    EXPECT_EQ(c.gemm, Bf16Gemm::kF32Fma);
    EXPECT_EQ(c.dpbf16_over_fma, 0);
  }
  EXPECT_EQ(ResolveBf16Gemm("dpbf16", CpuIsa::kAvx2, &c).code(), TSR_ERR_UNSUPPORTED);
  EXPECT_EQ(ResolveBf16Gemm("bf16", CpuIsa::kAvx512Bf16, &c).code(), TSR_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(ResolveBf16Gemm("dpbf16", CpuIsa::kAvx512Bf16, &c).ok());
  EXPECT_EQ(c.gemm, Bf16Gemm::kDpbf16);
  EXPECT_STREQ(Bf16GemmName(Bf16Gemm::kDpbf16), "dpbf16");
  EXPECT_STREQ(Bf16GemmName(Bf16Gemm::kF32Fma), "f32");
}

TEST(Bf16GemmChoiceTest, AutoMeasuresOnAvx512Bf16) {
  if (!CpuSupports(CpuIsa::kAvx512Bf16)) GTEST_SKIP() << "this CPU has no AVX512_BF16";
  Bf16GemmChoice c;
  ASSERT_TRUE(ResolveBf16Gemm("auto", CpuIsa::kAvx512Bf16, &c).ok());
  ASSERT_GT(c.dpbf16_over_fma, 0);
  EXPECT_EQ(c.gemm, c.dpbf16_over_fma >= 1.0 ? Bf16Gemm::kDpbf16 : Bf16Gemm::kF32Fma);
  // Known chips measure about 0.5 (Intel Sapphire/Emerald Rapids) or 2
  // (AMD Zen 4/5): one instruction's throughput over another's.
  EXPECT_GT(c.dpbf16_over_fma, 0.2);
  EXPECT_LT(c.dpbf16_over_fma, 5.0);
  const double again = MeasureDpbf16OverFma();
  EXPECT_GT(again, c.dpbf16_over_fma / 1.5);
  EXPECT_LT(again, c.dpbf16_over_fma * 1.5);
}

}  // namespace
}  // namespace tessera::cpu
