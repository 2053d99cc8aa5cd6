// rms_norm and add_rms_norm: small cases against a naive f64 computation,
// in f32 and bf16, with leading dims, strided inputs and in-place aliasing.
#include <cmath>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

// Naive rms_norm over rows of h; inputs already rounded to the dtype.
std::vector<double> NaiveRmsNorm(const std::vector<double>& x, const std::vector<double>& w,
                                 int64_t h, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / h; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < h; ++i) sum += x[r * h + i] * x[r * h + i];
    double inv = 1.0 / std::sqrt(sum / h + eps);
    for (int64_t i = 0; i < h; ++i) y[r * h + i] = x[r * h + i] * inv * w[i];
  }
  return y;
}

std::vector<double> Rounded(tsr_dtype dtype, std::vector<double> v) {
  for (double& x : v) x = RoundTo(dtype, static_cast<float>(x));
  return v;
}

class NormTest : public CpuPluginTest, public ::testing::WithParamInterface<tsr_dtype> {
 protected:
  void SetUp() override {
    CpuPluginTest::SetUp();
    Init();
  }
  double Tol() const { return GetParam() == TSR_DTYPE_F32 ? 1e-5 : 1e-2; }
};

TEST_P(NormTest, RmsNormHandComputedRow) {
  const tsr_dtype dt = GetParam();
  DeviceTensor x = Make(dt, {1, 4}, {1, 2, 3, 4});
  DeviceTensor w = Make(dt, {4}, {1, 2, 1, 0.5});
  DeviceTensor y = Zeros(dt, {1, 4});
  tsr_rms_norm_params params{sizeof(params), 0.0f};
  ASSERT_EQ(Run(TSR_OP_RMS_NORM, {x, w}, {y}, &params, sizeof(params)), TSR_OK)
      << api_->last_error();
  const double inv = 1.0 / std::sqrt(7.5);  // mean of 1, 4, 9, 16
  ExpectNear(Read(y), {inv, 4 * inv, 3 * inv, 2 * inv}, 0, Tol());
}

TEST_P(NormTest, RmsNormLeadingDimsStridedAndInPlace) {
  const tsr_dtype dt = GetParam();
  std::vector<double> xs(2 * 3 * 5);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(0.7 * i) * 3;
  std::vector<double> ws = {0.5, -1, 2, 1.5, 0.25};
  // x (2, 3, 5) stored with gaps: strides (20, 6, 1).
  DeviceTensor x = Make(dt, {2, 3, 5}, xs, {20, 6, 1});
  DeviceTensor w = Make(dt, {5}, ws, {2});  // strided weight
  tsr_rms_norm_params params{sizeof(params), 1e-5f};
  ASSERT_EQ(Run(TSR_OP_RMS_NORM, {x, w}, {x}, &params, sizeof(params)), TSR_OK)
      << api_->last_error();  // y aliases x exactly
  ExpectNear(Read(x), NaiveRmsNorm(Rounded(dt, xs), Rounded(dt, ws), 5, 1e-5), 1e-6, Tol());
}

TEST_P(NormTest, AddRmsNormWritesResidualInPlace) {
  const tsr_dtype dt = GetParam();
  std::vector<double> xs = {1, -2, 0.5, 4, 3, 3, -1, 0};
  std::vector<double> rs = {0.25, 1, 1, -2, 0, 1, 2, 3};
  std::vector<double> ws = {1, 0.5, 2, 1};
  DeviceTensor x = Make(dt, {2, 4}, xs);
  DeviceTensor res = Make(dt, {2, 4}, rs, {8, 2});  // strided residual
  DeviceTensor w = Make(dt, {4}, ws);
  DeviceTensor y = Zeros(dt, {2, 4});
  tsr_rms_norm_params params{sizeof(params), 1e-6f};
  // residual_out aliases residual exactly.
  ASSERT_EQ(Run(TSR_OP_ADD_RMS_NORM, {x, res, w}, {y, res}, &params, sizeof(params)), TSR_OK)
      << api_->last_error();
  std::vector<double> sum(8);
  for (int i = 0; i < 8; ++i) sum[i] = RoundTo(dt, static_cast<float>(xs[i] + rs[i]));
  ExpectNear(Read(res), sum, 0);
  ExpectNear(Read(y), NaiveRmsNorm(sum, ws, 4, 1e-6), 1e-6, Tol());
}

TEST_P(NormTest, RejectsMismatchedWeight) {
  const tsr_dtype dt = GetParam();
  DeviceTensor x = Make(dt, {2, 4}, std::vector<double>(8, 1.0));
  DeviceTensor w = Make(dt, {5}, std::vector<double>(5, 1.0));
  DeviceTensor y = Zeros(dt, {2, 4});
  tsr_rms_norm_params params{sizeof(params), 1e-6f};
  EXPECT_EQ(Run(TSR_OP_RMS_NORM, {x, w}, {y}, &params, sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);
  DeviceTensor y_bad = Zeros(dt, {4, 2});
  DeviceTensor w4 = Make(dt, {4}, std::vector<double>(4, 1.0));
  EXPECT_EQ(Run(TSR_OP_RMS_NORM, {x, w4}, {y_bad}, &params, sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NormTest, ::testing::Values(TSR_DTYPE_F32, TSR_DTYPE_BF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace tessera::cpu::testing
