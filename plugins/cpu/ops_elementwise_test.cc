// embedding, silu_and_mul, add and cast: hand-computed cases in every
// listed dtype, strided views and exact aliasing.
#include <cmath>
#include <limits>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

class ElementwiseTest : public CpuPluginTest {
 protected:
  void SetUp() override {
    CpuPluginTest::SetUp();
    Init();
  }
};

TEST_F(ElementwiseTest, EmbeddingGathersRowsInEveryTableDtype) {
  for (tsr_dtype dt : {TSR_DTYPE_F32, TSR_DTYPE_BF16, TSR_DTYPE_F16}) {
    DeviceTensor ids = Make(TSR_DTYPE_I32, {3}, {2, 0, 2});
    DeviceTensor table = Make(dt, {3, 2}, {1, 2, 3, 4, 5, 6});
    DeviceTensor y = Zeros(dt, {3, 2});
    ASSERT_EQ(Run(TSR_OP_EMBEDDING, {ids, table}, {y}), TSR_OK) << api_->last_error();
    ExpectNear(Read(y), {5, 6, 1, 2, 5, 6}, 0);
    // Strided ids, a column-major table and a strided output.
    DeviceTensor ids_s = Make(TSR_DTYPE_I32, {2}, {1, 2}, {3});
    DeviceTensor table_t = Make(dt, {3, 2}, {1, 2, 3, 4, 5, 6}, {1, 3});
    DeviceTensor y_s = Zeros(dt, {2, 2}, {1, 4});
    ASSERT_EQ(Run(TSR_OP_EMBEDDING, {ids_s, table_t}, {y_s}), TSR_OK) << api_->last_error();
    ExpectNear(Read(y_s), {3, 4, 5, 6}, 0);
  }
}

TEST_F(ElementwiseTest, SiluAndMulOverLeadingDims) {
  for (tsr_dtype dt : {TSR_DTYPE_F32, TSR_DTYPE_BF16}) {
    std::vector<double> xs = {1, -2, 0.5, 3, 0, 4, 2, -1, -0.5, 1, 1.5, 2};
    DeviceTensor x = Make(dt, {2, 1, 6}, xs);
    DeviceTensor y = Zeros(dt, {2, 1, 3}, {3, 3, 1});
    ASSERT_EQ(Run(TSR_OP_SILU_AND_MUL, {x}, {y}), TSR_OK) << api_->last_error();
    std::vector<double> expected;
    for (int r = 0; r < 2; ++r) {
      for (int i = 0; i < 3; ++i) {
        double a = xs[r * 6 + i], b = xs[r * 6 + 3 + i];
        expected.push_back(a / (1 + std::exp(-a)) * b);
      }
    }
    ExpectNear(Read(y), expected, 1e-6, dt == TSR_DTYPE_F32 ? 1e-6 : 1e-2);
    DeviceTensor odd = Make(dt, {1, 5}, {1, 2, 3, 4, 5});
    DeviceTensor y2 = Zeros(dt, {1, 2});
    EXPECT_EQ(Run(TSR_OP_SILU_AND_MUL, {odd}, {y2}), TSR_ERR_INVALID_ARGUMENT);
  }
}

TEST_F(ElementwiseTest, AddWithTransposedOperandAndAliasing) {
  for (tsr_dtype dt : {TSR_DTYPE_F32, TSR_DTYPE_BF16}) {
    DeviceTensor a = Make(dt, {2, 3}, {1, 2, 3, 4, 5, 6});
    // b is logically (2, 3) but stored column-major.
    DeviceTensor b = Make(dt, {2, 3}, {10, 20, 30, 40, 50, 60}, {1, 2});
    ASSERT_EQ(Run(TSR_OP_ADD, {a, b}, {a}), TSR_OK) << api_->last_error();  // y aliases a
    ExpectNear(Read(a), {11, 22, 33, 44, 55, 66}, 0);
    ASSERT_EQ(Run(TSR_OP_ADD, {a, b}, {b}), TSR_OK) << api_->last_error();  // y aliases b
    ExpectNear(Read(b), {21, 42, 63, 84, 105, 126}, 0);
    DeviceTensor s1 = Make(dt, {}, {1.5});
    DeviceTensor s2 = Make(dt, {}, {2.25});
    DeviceTensor s3 = Zeros(dt, {});
    ASSERT_EQ(Run(TSR_OP_ADD, {s1, s2}, {s3}), TSR_OK) << api_->last_error();  // rank 0
    ExpectNear(Read(s3), {3.75}, 0);
  }
  DeviceTensor big_a = Make(TSR_DTYPE_F32, {100000}, std::vector<double>(100000, 1.0));
  DeviceTensor big_y = Zeros(TSR_DTYPE_F32, {100000});
  ASSERT_EQ(Run(TSR_OP_ADD, {big_a, big_a}, {big_y}), TSR_OK);
  ExpectNear(Read(big_y), std::vector<double>(100000, 2.0), 0);
  DeviceTensor c = Make(TSR_DTYPE_F32, {3, 2}, std::vector<double>(6, 1.0));
  DeviceTensor d = Make(TSR_DTYPE_F32, {2, 3}, std::vector<double>(6, 1.0));
  EXPECT_EQ(Run(TSR_OP_ADD, {c, d}, {c}), TSR_ERR_INVALID_ARGUMENT);
}

TEST_F(ElementwiseTest, CastRoundsToNearestEvenBetweenAllFloatTypes) {
  const float inf = std::numeric_limits<float>::infinity();
  // Ties for bf16 (1 + 2^-8, 1 + 3 * 2^-8), f16 overflow (65520 -> inf),
  // f16 subnormals and underflow, negative zero, a large f32.
  std::vector<double> values = {1.0,   1.00390625, 1.01171875, -2.5,  65504, 65520,
                                1e-6,  1e-8,       -0.0,       3e38,  0.1,   -inf};
  const tsr_dtype types[] = {TSR_DTYPE_F32, TSR_DTYPE_BF16, TSR_DTYPE_F16};
  for (tsr_dtype from : types) {
    for (tsr_dtype to : types) {
      DeviceTensor x = Make(from, {3, 4}, values);
      DeviceTensor y = Zeros(to, {3, 4}, {1, 3});  // transposed output
      ASSERT_EQ(Run(TSR_OP_CAST, {x}, {y}), TSR_OK) << api_->last_error();
      std::vector<double> expected;
      for (double v : values) expected.push_back(RoundTo(to, RoundTo(from, static_cast<float>(v))));
      std::vector<double> got = Read(y);
      for (size_t i = 0; i < values.size(); ++i) {
        if (std::isinf(expected[i])) {
          EXPECT_EQ(got[i], expected[i]) << DTypeName(from) << "->" << DTypeName(to) << " " << i;
        } else {
          EXPECT_EQ(got[i], expected[i]) << DTypeName(from) << "->" << DTypeName(to) << " " << i;
          EXPECT_EQ(std::signbit(got[i]), std::signbit(expected[i]));
        }
      }
    }
  }
  // Spot checks against hand-computed bits.
  EXPECT_EQ(RoundTo(TSR_DTYPE_BF16, 1.00390625f), 1.0f);         // tie to even
  EXPECT_EQ(RoundTo(TSR_DTYPE_BF16, 1.01171875f), 1.015625f);    // tie to even (up)
  EXPECT_TRUE(std::isinf(RoundTo(TSR_DTYPE_F16, 65520.0f)));
}

TEST_F(ElementwiseTest, CastKeepsNaN) {
  DeviceTensor x = Make(TSR_DTYPE_F32, {1}, {std::nan("")});
  for (tsr_dtype to : {TSR_DTYPE_BF16, TSR_DTYPE_F16}) {
    DeviceTensor y = Zeros(to, {1});
    ASSERT_EQ(Run(TSR_OP_CAST, {x}, {y}), TSR_OK);
    EXPECT_TRUE(std::isnan(Read(y)[0]));
  }
}

}  // namespace
}  // namespace tessera::cpu::testing
