#include "gguf/tensor_encode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tessera::gguf {
namespace {

uint16_t U16At(const std::vector<std::byte>& bytes, size_t at) {
  uint16_t v;
  std::memcpy(&v, bytes.data() + at, 2);
  return v;
}

int8_t QAt(const std::vector<std::byte>& bytes, size_t block, size_t i) {
  return int8_t(bytes[block * kQ8_0BlockBytes + 2 + i]);
}

TEST(Q8_0Test, BlockWithUnitScaleRoundsHalfAwayFromZero) {
  // max |x| = 127, so d = 1 exactly and q = round(x).
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = -3.5f;
  x[2] = 2.5f;
  x[3] = 0.49f;
  x[4] = -127.0f;
  x[5] = 64.4f;
  std::vector<std::byte> out(kQ8_0BlockBytes);
  EncodeQ8_0(x, out);
  EXPECT_EQ(U16At(out, 0), 0x3C00);  // f16 1.0
  EXPECT_EQ(QAt(out, 0, 0), 127);
  EXPECT_EQ(QAt(out, 0, 1), -4);
  EXPECT_EQ(QAt(out, 0, 2), 3);
  EXPECT_EQ(QAt(out, 0, 3), 0);
  EXPECT_EQ(QAt(out, 0, 4), -127);
  EXPECT_EQ(QAt(out, 0, 5), 64);
  for (size_t i = 6; i < 32; ++i) EXPECT_EQ(QAt(out, 0, i), 0);
}

TEST(Q8_0Test, ScaleIsMaxAbsOver127AndZeroBlocksStayZero) {
  std::vector<float> x(64, 0.0f);
  x[7] = -0.5f;  // block 0: d = 0.5 / 127
  x[8] = 0.2f;   // q = round(0.2 * 127 / 0.5) = round(50.8) = 51
  // block 1 all zero.
  std::vector<std::byte> out(2 * kQ8_0BlockBytes);
  EncodeQ8_0(x, out);
  EXPECT_EQ(U16At(out, 0), FloatToF16(0.5f / 127.0f));
  EXPECT_EQ(QAt(out, 0, 7), -127);
  EXPECT_EQ(QAt(out, 0, 8), 51);
  EXPECT_EQ(U16At(out, kQ8_0BlockBytes), 0);
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(QAt(out, 1, i), 0);

  std::vector<float> back(64);
  DecodeQ8_0(out, back);
  const float d = F16ToFloat(FloatToF16(0.5f / 127.0f));
  EXPECT_FLOAT_EQ(back[7], -127.0f * d);
  EXPECT_FLOAT_EQ(back[8], 51.0f * d);
  EXPECT_EQ(back[40], 0.0f);
}

TEST(Q8_0Test, RoundTripErrorIsWithinHalfAStep) {
  std::mt19937 gen(7);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> x(32 * 50);
  for (float& v : x) v = dist(gen);
  std::vector<std::byte> out(50 * kQ8_0BlockBytes);
  EncodeQ8_0(x, out);
  std::vector<float> back(x.size());
  DecodeQ8_0(out, back);
  for (size_t b = 0; b < 50; ++b) {
    float amax = 0.0f;
    for (size_t i = 0; i < 32; ++i)
      amax = std::max(amax, std::fabs(x[b * 32 + i]));
    const float d = amax / 127.0f;
    for (size_t i = 0; i < 32; ++i) {
      // Half a step, plus the f16 rounding of d times |q| <= 127.
      EXPECT_LE(std::fabs(back[b * 32 + i] - x[b * 32 + i]),
                0.5f * d + 127.0f * d * 1e-3f)
          << "block " << b << " element " << i;
    }
  }
}

TEST(EncodeRowTest, FloatFormats) {
  std::vector<float> x = {1.0f, -2.0f};
  std::vector<std::byte> f16(4), bf16(4), f32(8);
  ASSERT_TRUE(EncodeRow(x, TensorType::kF16, f16).ok());
  ASSERT_TRUE(EncodeRow(x, TensorType::kBF16, bf16).ok());
  ASSERT_TRUE(EncodeRow(x, TensorType::kF32, f32).ok());
  EXPECT_EQ(U16At(f16, 0), 0x3C00);
  EXPECT_EQ(U16At(f16, 2), 0xC000);
  EXPECT_EQ(U16At(bf16, 0), 0x3F80);
  EXPECT_EQ(U16At(bf16, 2), 0xC000);
  float back[2];
  std::memcpy(back, f32.data(), 8);
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], -2.0f);
}

TEST(EncodeRowTest, RejectsPartialBlocksAndWrongSizes) {
  std::vector<float> x(33, 1.0f);
  std::vector<std::byte> out(kQ8_0BlockBytes * 2);
  Status s = EncodeRow(x, TensorType::kQ8_0, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("multiple of 32"), std::string::npos);
  std::vector<float> y(32, 1.0f);
  EXPECT_EQ(EncodeRow(y, TensorType::kQ8_0, out).code(),
            StatusCode::kInvalidArgument);
  std::vector<std::byte> exact(kQ8_0BlockBytes);
  EXPECT_TRUE(EncodeRow(y, TensorType::kQ8_0, exact).ok());
}

TEST(DecodeToFloatTest, ReadsEachCheckpointDtype) {
  const uint16_t bf16[2] = {0x3F80, 0x4040};  // 1, 3
  const uint16_t f16[2] = {0x3C00, 0xC200};   // 1, -3
  const float f32[2] = {0.25f, -8.0f};
  std::vector<float> out(2);
  DecodeToFloat(reinterpret_cast<const std::byte*>(bf16), TSR_DTYPE_BF16, out);
  EXPECT_EQ(out, (std::vector<float>{1.0f, 3.0f}));
  DecodeToFloat(reinterpret_cast<const std::byte*>(f16), TSR_DTYPE_F16, out);
  EXPECT_EQ(out, (std::vector<float>{1.0f, -3.0f}));
  DecodeToFloat(reinterpret_cast<const std::byte*>(f32), TSR_DTYPE_F32, out);
  EXPECT_EQ(out, (std::vector<float>{0.25f, -8.0f}));
}

TEST(GgufFormatTest, SizesAndNames) {
  EXPECT_EQ(TensorBytes(TensorType::kQ8_0, std::vector<int64_t>{3, 64}),
            3u * 2u * 34u);
  EXPECT_EQ(TensorBytes(TensorType::kBF16, std::vector<int64_t>{3, 5}), 30u);
  EXPECT_FALSE(TensorBytes(TensorType::kQ8_0, std::vector<int64_t>{4, 40}));
  EXPECT_EQ(ParseTensorType("q8_0"), TensorType::kQ8_0);
  EXPECT_EQ(ParseTensorType("bf16"), TensorType::kBF16);
  EXPECT_FALSE(ParseTensorType("q4_0"));
  EXPECT_EQ(uint32_t(FileTypeFor(TensorType::kBF16)), 32u);
  EXPECT_EQ(AlignUp(33, 32), 64u);
}

}  // namespace
}  // namespace tessera::gguf
