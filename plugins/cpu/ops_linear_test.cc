// linear: a hand-computed case, then seeded random shapes that exercise the
// micro-kernel tails (K % 8, N % 4, odd T), strided x and y, bias, every
// (activation, weight) dtype pair, and several row blocks.
#include <cmath>
#include <random>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

class LinearTest : public CpuPluginTest {
 protected:
  void SetUp() override {
    CpuPluginTest::SetUp();
    Init({{"threads", "3"}});
  }

  // Runs y = x w^T (+ b) with random data and compares to f64 math on the
  // rounded inputs.
  void CheckRandom(tsr_dtype a, tsr_dtype wt, int64_t t, int64_t k, int64_t n, bool bias,
                   bool strided) {
    std::mt19937 rng(static_cast<uint32_t>(t * 131 + k * 7 + n));
    std::uniform_real_distribution<double> dist(-1, 1);
    std::vector<double> xs(t * k), ws(n * k), bs(n);
    for (double& v : xs) v = RoundTo(a, static_cast<float>(dist(rng)));
    for (double& v : ws) v = RoundTo(wt, static_cast<float>(dist(rng)));
    for (double& v : bs) v = RoundTo(a, static_cast<float>(dist(rng)));
    // Strided: x stored column-major, w rows padded, y column-major.
    DeviceTensor x = strided ? Make(a, {t, k}, xs, {1, t}) : Make(a, {t, k}, xs);
    DeviceTensor w = strided ? Make(wt, {n, k}, ws, {k + 3, 1}) : Make(wt, {n, k}, ws);
    DeviceTensor y = strided ? Zeros(a, {t, n}, {1, t}) : Zeros(a, {t, n});
    std::vector<DeviceTensor> in = {x, w};
    if (bias) in.push_back(Make(a, {n}, bs));
    ASSERT_EQ(Run(TSR_OP_LINEAR, in, {y}), TSR_OK) << api_->last_error();
    std::vector<double> expected(t * n);
    for (int64_t i = 0; i < t; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = bias ? bs[j] : 0.0;
        for (int64_t c = 0; c < k; ++c) s += xs[i * k + c] * ws[j * k + c];
        expected[i * n + j] = s;
      }
    }
    const double rel = a == TSR_DTYPE_F32 ? 1e-5 : 1e-2;
    ExpectNear(Read(y), expected, 1e-4 * std::sqrt(static_cast<double>(k)), rel);
  }
};

TEST_F(LinearTest, HandComputedWithBias) {
  DeviceTensor x = Make(TSR_DTYPE_F32, {2, 3}, {1, 2, 3, -1, 0, 2});
  DeviceTensor w = Make(TSR_DTYPE_F32, {4, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1});
  DeviceTensor b = Make(TSR_DTYPE_F32, {4}, {0.5, 0, 0, -1});
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {2, 4});
  ASSERT_EQ(Run(TSR_OP_LINEAR, {x, w, b}, {y}), TSR_OK) << api_->last_error();
  ExpectNear(Read(y), {1.5, 2, 3, 5, -0.5, 0, 2, 0}, 1e-6);
  ASSERT_EQ(Run(TSR_OP_LINEAR, {x, w}, {y}), TSR_OK) << api_->last_error();
  ExpectNear(Read(y), {1, 2, 3, 6, -1, 0, 2, 1}, 1e-6);
}

TEST_F(LinearTest, RandomShapesAllDtypePairs) {
  const std::pair<tsr_dtype, tsr_dtype> pairs[] = {{TSR_DTYPE_F32, TSR_DTYPE_F32},
                                                   {TSR_DTYPE_F32, TSR_DTYPE_F16},
                                                   {TSR_DTYPE_BF16, TSR_DTYPE_BF16},
                                                   {TSR_DTYPE_BF16, TSR_DTYPE_F16}};
  for (auto [a, w] : pairs) {
    SCOPED_TRACE(std::string(DTypeName(a)) + " x " + std::string(DTypeName(w)));
    CheckRandom(a, w, 1, 16, 8, false, false);
    CheckRandom(a, w, 5, 37, 11, true, false);
    CheckRandom(a, w, 3, 9, 5, true, true);
    CheckRandom(a, w, 2, 1, 3, false, true);
  }
}

TEST_F(LinearTest, ManyRowBlocks) {
  CheckRandom(TSR_DTYPE_F32, TSR_DTYPE_F32, 300, 1024, 10, true, false);
}

TEST_F(LinearTest, RejectsBadShapes) {
  DeviceTensor x = Make(TSR_DTYPE_F32, {2, 3}, std::vector<double>(6, 1));
  DeviceTensor w = Make(TSR_DTYPE_F32, {4, 2}, std::vector<double>(8, 1));
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {2, 4});
  EXPECT_EQ(Run(TSR_OP_LINEAR, {x, w}, {y}), TSR_ERR_INVALID_ARGUMENT);
  DeviceTensor w_t = Make(TSR_DTYPE_F32, {4, 3}, std::vector<double>(12, 1), {1, 4});
  EXPECT_EQ(Run(TSR_OP_LINEAR, {x, w_t}, {y}), TSR_ERR_INVALID_ARGUMENT);  // non-unit stride
  EXPECT_THAT(api_->last_error(), ::testing::HasSubstr("unit innermost stride"));
}

}  // namespace
}  // namespace tessera::cpu::testing
