#include <cmath>

#include "reference/ops_test_util.h"

namespace tessera::reference {
namespace {

const tsr_rms_norm_params kNoEps{sizeof(tsr_rms_norm_params), 0.0f};

TEST(RmsNormTest, HandComputed) {
  // x = (3, 4): mean(x^2) = 12.5, rms = 3.5355; y = x / rms * (1, 2).
  auto x = F32({1, 2}, {3, 4});
  auto w = F32({2}, {1, 2});
  OwnedTensor y(TSR_DTYPE_F32, {1, 2});
  ASSERT_TRUE(
      RunOp(TSR_OP_RMS_NORM, {x.view(), w.view()}, {y.view()}, &kNoEps).ok());
  double rms = std::sqrt(12.5);
  EXPECT_THAT(y, ValuesNear(std::vector<double>{3 / rms, 8 / rms}));
}

TEST(RmsNormTest, EpsLeadingDimsStridesAndAlias) {
  tsr_rms_norm_params params{sizeof(params), 1.0f};
  // A [2, 1, 2] view with a row stride of 3 (one padding element per row).
  std::vector<float> data = {1, 1, 99, 2, 0, 99};
  HostTensor x{data.data(), TSR_DTYPE_F32, {2, 1, 2}, {3, 3, 1}};
  auto w = F32({2}, {1, 1});
  // In place: y aliases x exactly.
  ASSERT_TRUE(RunOp(TSR_OP_RMS_NORM, {x, w.view()}, {x}, &params).ok());
  // Row 0: mean 1, + eps 1 -> /sqrt(2). Row 1: mean 2, + 1 -> /sqrt(3).
  EXPECT_NEAR(data[0], 1 / std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(data[1], 1 / std::sqrt(2.0), 1e-6);
  EXPECT_EQ(data[2], 99);  // padding untouched
  EXPECT_NEAR(data[3], 2 / std::sqrt(3.0), 1e-6);
  EXPECT_EQ(data[4], 0);
}

TEST(RmsNormTest, ValidationErrors) {
  auto x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto w = F32({4}, {1, 1, 1, 1});
  OwnedTensor y(TSR_DTYPE_F32, {2, 3});
  Status s = RunOp(TSR_OP_RMS_NORM, {x.view(), w.view()}, {y.view()}, &kNoEps);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("w has shape [4], expected [3]"),
            std::string::npos)
      << s.message();
  auto w3 = F32({3}, {1, 1, 1});
  EXPECT_FALSE(RunOp(TSR_OP_RMS_NORM, {x.view(), w3.view()}, {y.view()}).ok())
      << "params are required";
  OwnedTensor y_bf16(TSR_DTYPE_BF16, {2, 3});
  EXPECT_FALSE(
      RunOp(TSR_OP_RMS_NORM, {x.view(), w3.view()}, {y_bf16.view()}, &kNoEps)
          .ok());
  // y overlapping x without being an exact alias.
  HostTensor shifted = x.view();
  shifted.shape = {1, 3};
  EXPECT_FALSE(
      RunOp(TSR_OP_RMS_NORM, {x.view(), w3.view()}, {shifted}, &kNoEps).ok());
}

TEST(AddRmsNormTest, HandComputed) {
  auto x = F32({1, 2}, {1, 2});
  auto residual = F32({1, 2}, {2, 2});
  auto w = F32({2}, {1, 2});
  OwnedTensor y(TSR_DTYPE_F32, {1, 2});
  // residual_out aliases residual exactly (allowed).
  ASSERT_TRUE(RunOp(TSR_OP_ADD_RMS_NORM, {x.view(), residual.view(), w.view()},
                    {y.view(), residual.view()}, &kNoEps)
                  .ok());
  double rms = std::sqrt(12.5);  // of (3, 4)
  EXPECT_THAT(residual, ValuesNear(std::vector<double>{3, 4}));
  EXPECT_THAT(y, ValuesNear(std::vector<double>{3 / rms, 8 / rms}));
}

TEST(AddRmsNormTest, NormUsesTheRoundedSum) {
  // bf16: 1 + 2^-9 rounds to 1, so the norm sees exactly 1 (H = 1).
  auto x = OwnedTensor::FromValues(TSR_DTYPE_BF16, {1, 1}, {1.0});
  auto residual = OwnedTensor::FromValues(TSR_DTYPE_BF16, {1, 1}, {1.0 / 512});
  auto w = OwnedTensor::FromValues(TSR_DTYPE_BF16, {1}, {3.0});
  OwnedTensor y(TSR_DTYPE_BF16, {1, 1}), residual_out(TSR_DTYPE_BF16, {1, 1});
  ASSERT_TRUE(RunOp(TSR_OP_ADD_RMS_NORM, {x.view(), residual.view(), w.view()},
                    {y.view(), residual_out.view()}, &kNoEps)
                  .ok());
  EXPECT_EQ(residual_out.Values()[0], 1.0);
  EXPECT_EQ(y.Values()[0], 3.0);
}

}  // namespace
}  // namespace tessera::reference
