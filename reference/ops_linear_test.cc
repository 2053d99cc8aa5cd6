#include <cstring>
#include <random>

#include "base/dtype.h"
#include "gguf/block_decode.h"
#include "reference/ops_test_util.h"

namespace tessera::reference {
namespace {

TEST(LinearTest, HandComputedWithBias) {
  // x [2, 3], w [2, 3] (HF [out, in]), bias [2]:
  //   y[0] = (1 - 3 + 10, 0.5 * 6 + 20), y[1] = (4 - 6 + 10, 0.5 * 15 + 20).
  auto x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  auto w = F32({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  auto bias = F32({2}, {10, 20});
  OwnedTensor y(TSR_DTYPE_F32, {2, 2});
  ASSERT_TRUE(
      RunOp(TSR_OP_LINEAR, {x.view(), w.view(), bias.view()}, {y.view()}).ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{8, 23, 8, 27.5}));
  ASSERT_TRUE(RunOp(TSR_OP_LINEAR, {x.view(), w.view()}, {y.view()}).ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{-2, 3, -2, 7.5}));
}

TEST(LinearTest, TransposedActivationsAndF16Weights) {
  std::vector<float> xt = {1, 4, 2, 5, 3, 6};  // x^T stored [3, 2]
  HostTensor x{xt.data(), TSR_DTYPE_F32, {2, 3}, {1, 2}};
  auto w =
      OwnedTensor::FromValues(TSR_DTYPE_F16, {2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  OwnedTensor y(TSR_DTYPE_F32, {2, 2});
  ASSERT_TRUE(RunOp(TSR_OP_LINEAR, {x, w.view()}, {y.view()}).ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{-2, 3, -2, 7.5}));
}

TEST(LinearW8Test, HandComputedGroupsAndBias) {
  // x [1, 4]; w I8 [2, 4] in groups of 2 with scales [2, 2]:
  //   y[0] = (1*2 + 2*(-4)) * 0.5 + (3*1 + 4*0) * 0.25 + 1 = -1.25
  //   y[1] = (1 + 2) * 10 * 0.1 + (3 + 4) * (-1) * 2 = -11
  auto x = F32({1, 4}, {1, 2, 3, 4});
  auto w = OwnedTensor::FromValues(TSR_DTYPE_I8, {2, 4}, {2, -4, 1, 0, 10, 10, -1, -1});
  auto s = F32({2, 2}, {0.5, 0.25, 0.1, 2});
  auto bias = F32({2}, {1, 0});
  OwnedTensor y(TSR_DTYPE_F32, {1, 2});
  const tsr_linear_w8_params p{sizeof(tsr_linear_w8_params), 2};
  std::vector<HostTensor> out = {y.view()};
  ASSERT_TRUE(RunReferenceOp(TSR_OP_LINEAR, kLinearW8Version,
                             std::vector<HostTensor>{x.view(), w.view(), s.view(),
                                                     bias.view()},
                             out, &p)
                  .ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{-1.25, -11}));
  // Per channel (G = K): scales [2, 1].
  auto s1 = F32({2, 1}, {1, 0.5});
  const tsr_linear_w8_params per_channel{sizeof(tsr_linear_w8_params), 4};
  ASSERT_TRUE(RunReferenceOp(TSR_OP_LINEAR, kLinearW8Version,
                             std::vector<HostTensor>{x.view(), w.view(), s1.view()},
                             out, &per_channel)
                  .ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{-3, 11.5}));
  // A group size that does not divide K, or a scale of the wrong shape.
  const tsr_linear_w8_params bad{sizeof(tsr_linear_w8_params), 3};
  Status st = RunReferenceOp(TSR_OP_LINEAR, kLinearW8Version,
                             std::vector<HostTensor>{x.view(), w.view(), s1.view()},
                             out, &bad);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("group_size 3"));
  st = RunReferenceOp(TSR_OP_LINEAR, kLinearW8Version,
                      std::vector<HostTensor>{x.view(), w.view(), s.view()}, out,
                      &per_channel);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("w_scale"));
  // I8 weights are not a v1 signature.
  EXPECT_FALSE(RunOp(TSR_OP_LINEAR, {x.view(), w.view()}, {y.view()}).ok());
}

TEST(LinearW8A8Test, QuantisesActivationsPerBlockTiesToEven) {
  // x [1, 4] in blocks of 2. Block 0 = (2.5, 127): a = 127, 127 / a = 1, so
  // q = (2, 127) — 2.5 ties to even (away from zero would give 3).
  // Block 1 = (0.5, -4): a = 4, q = (round(15.875) = 16, -127), s = 4 / 127.
  // With w = 1 and unit scales: y = 2 + 127 + 16 * 4 / 127 - 4.
  auto x = F32({1, 4}, {2.5, 127, 0.5, -4});
  auto w = OwnedTensor::FromValues(TSR_DTYPE_I8, {1, 4}, {1, 1, 1, 1});
  auto s = F32({1, 2}, {1, 1});
  OwnedTensor y(TSR_DTYPE_F32, {1, 1});
  const tsr_linear_w8_params p{sizeof(tsr_linear_w8_params), 2};
  std::vector<HostTensor> out = {y.view()};
  ASSERT_TRUE(RunReferenceOp(TSR_OP_LINEAR, kLinearW8A8Version,
                             std::vector<HostTensor>{x.view(), w.view(), s.view()}, out,
                             &p)
                  .ok());
  const double s1 = static_cast<double>(4.0f / 127.0f);
  EXPECT_THAT(y, ValuesNear(std::vector<double>{2 + 127 + 16 * s1 - 127 * s1}));
  // v2 on the same tensors keeps x as it is: 2.5 + 127 + 0.5 - 4.
  ASSERT_TRUE(RunReferenceOp(TSR_OP_LINEAR, kLinearW8Version,
                             std::vector<HostTensor>{x.view(), w.view(), s.view()}, out,
                             &p)
                  .ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{126}));
  // An all-zero block quantises to zeros (no division by zero).
  auto zeros = F32({1, 4}, {0, 0, 1, 1});
  ASSERT_TRUE(RunReferenceOp(TSR_OP_LINEAR, kLinearW8A8Version,
                             std::vector<HostTensor>{zeros.view(), w.view(), s.view()},
                             out, &p)
                  .ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{2}));
}

TEST(LinearW4A8Test, UnpacksQ4NibblesAndQuantisesActivations) {
  // x [1, 32] of integers with max |x| = 127: the activation scale is 1 and
  // q = x. w [1, 32] 4-bit packed: byte j = j (low nibble: weight j is
  // j - 8) | (15 - j) << 4 (high: weight j + 16 is 7 - j), scale 0.5 (F16).
  std::vector<double> xs(32), bytes(16);
  for (int k = 0; k < 32; ++k) xs[k] = k == 5 ? -127 : (k * 7) % 23 - 11;
  for (int j = 0; j < 16; ++j) bytes[j] = j | (15 - j) << 4;
  double want = 0;
  for (int k = 0; k < 32; ++k) want += xs[k] * (k < 16 ? k - 8 : 7 - (k - 16)) * 0.5;
  auto x = F32({1, 32}, xs);
  auto w = OwnedTensor::FromValues(TSR_DTYPE_U8, {1, 16}, bytes);
  auto s = OwnedTensor::FromValues(TSR_DTYPE_F16, {1, 1}, {0.5});
  auto bias = F32({1}, {3});
  OwnedTensor y(TSR_DTYPE_F32, {1, 1});
  const tsr_linear_w8_params p{sizeof(tsr_linear_w8_params), 32};
  std::vector<HostTensor> out = {y.view()};
  ASSERT_TRUE(RunReferenceOp(TSR_OP_LINEAR, kLinearW4A8Version,
                             std::vector<HostTensor>{x.view(), w.view(), s.view(),
                                                     bias.view()},
                             out, &p)
                  .ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{want + 3}));
  // Group sizes must be multiples of 32; w must be [N, K / 2].
  const tsr_linear_w8_params g16{sizeof(tsr_linear_w8_params), 16};
  auto s2 = OwnedTensor::FromValues(TSR_DTYPE_F16, {1, 2}, {0.5, 0.5});
  Status st = RunReferenceOp(TSR_OP_LINEAR, kLinearW4A8Version,
                             std::vector<HostTensor>{x.view(), w.view(), s2.view()}, out,
                             &g16);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("multiple of 32"));
  auto w_wide = OwnedTensor::FromValues(TSR_DTYPE_U8, {1, 32}, std::vector<double>(32, 0));
  st = RunReferenceOp(TSR_OP_LINEAR, kLinearW4A8Version,
                      std::vector<HostTensor>{x.view(), w_wide.view(), s.view()}, out, &p);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("K / 2"));
  // U8 weights are not a v3 signature, nor F32 scales a v4 one.
  EXPECT_FALSE(RunReferenceOp(TSR_OP_LINEAR, kLinearW8A8Version,
                              std::vector<HostTensor>{x.view(), w.view(), s.view()}, out,
                              &p)
                   .ok());
  auto s32 = F32({1, 1}, {0.5});
  EXPECT_FALSE(RunReferenceOp(TSR_OP_LINEAR, kLinearW4A8Version,
                              std::vector<HostTensor>{x.view(), w.view(), s32.view()}, out,
                              &p)
                   .ok());
}

// linear v5 against the GGUF reader's own Q6_K decoder (gguf/block_decode):
// a real 210-byte block of random bytes, split into the op's 208 bytes and
// its f16 d; x integers with a +-127 in every block of 32, so q = x.
TEST(LinearW6A8Test, MatchesTheGgufQ6KDecoderOnRandomBlocks) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  constexpr int64_t kK = 512, kN = 3;
  std::vector<double> w_bytes, d_values;
  std::vector<std::vector<float>> decoded(kN, std::vector<float>(kK));
  for (int64_t n = 0; n < kN; ++n) {
    std::vector<std::byte> row(kK / 256 * 210);
    for (auto& b : row) b = std::byte(byte(rng));
    for (int64_t c = 0; c < kK / 256; ++c) {
      // d: a small normal f16 (0x1c00 + up to 0x3ff: about 0.004-0.008).
      const uint16_t d = static_cast<uint16_t>(0x1c00 | (byte(rng) << 2));
      std::memcpy(&row[c * 210 + 208], &d, 2);
      d_values.push_back(F16ToFloat(d));
      for (int i = 0; i < 208; ++i) w_bytes.push_back(double(uint8_t(row[c * 210 + i])));
    }
    gguf::DecodeRow(gguf::TensorType::kQ6_K, row.data(), kK, decoded[n].data());
  }
  std::vector<double> xs(kK);
  for (int64_t k = 0; k < kK; ++k) xs[k] = k % 32 == 7 ? (k % 64 ? 127 : -127) : byte(rng) % 255 - 127;
  auto x = F32({1, kK}, xs);
  auto w = OwnedTensor::FromValues(TSR_DTYPE_U8, {kN, kK / 256 * 208}, w_bytes);
  auto s = OwnedTensor::FromValues(TSR_DTYPE_F16, {kN, kK / 256}, d_values);
  OwnedTensor y(TSR_DTYPE_F32, {1, kN});
  std::vector<double> want(kN, 0.0);
  for (int64_t n = 0; n < kN; ++n) {
    for (int64_t k = 0; k < kK; ++k) want[n] += xs[k] * decoded[n][k];
  }
  std::vector<HostTensor> out = {y.view()};
  for (int32_t g : {32, 64, 256}) {
    const tsr_linear_w8_params p{sizeof(tsr_linear_w8_params), g};
    ASSERT_TRUE(RunReferenceOp(TSR_OP_LINEAR, kLinearW6A8Version,
                               std::vector<HostTensor>{x.view(), w.view(), s.view()}, out, &p)
                    .ok());
    EXPECT_THAT(y, ValuesNear(want)) << "G = " << g;
  }
  // G must keep a block of x in one super-block; K must be whole blocks.
  const tsr_linear_w8_params g512{sizeof(tsr_linear_w8_params), 512};
  Status st = RunReferenceOp(TSR_OP_LINEAR, kLinearW6A8Version,
                             std::vector<HostTensor>{x.view(), w.view(), s.view()}, out,
                             &g512);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("32, 64, 128 or 256"));
  auto x_short = F32({1, 128}, std::vector<double>(128, 1.0));
  const tsr_linear_w8_params p32{sizeof(tsr_linear_w8_params), 32};
  st = RunReferenceOp(TSR_OP_LINEAR, kLinearW6A8Version,
                      std::vector<HostTensor>{x_short.view(), w.view(), s.view()}, out, &p32);
  EXPECT_THAT(st.message(), ::testing::HasSubstr("multiple of 256"));
  // F32 scales are not a v5 signature.
  auto s32 = F32({kN, kK / 256}, d_values);
  EXPECT_FALSE(RunReferenceOp(TSR_OP_LINEAR, kLinearW6A8Version,
                              std::vector<HostTensor>{x.view(), w.view(), s32.view()}, out,
                              &p32)
                   .ok());
}

TEST(LinearTest, ValidationErrors) {
  auto x = F32({2, 3}, {1, 2, 3, 4, 5, 6});
  OwnedTensor y(TSR_DTYPE_F32, {2, 2});
  // w with a non-unit innermost stride (a transposed view) is not allowed.
  std::vector<float> wt(6, 1.0f);
  HostTensor w_t{wt.data(), TSR_DTYPE_F32, {2, 3}, {1, 2}};
  Status s = RunOp(TSR_OP_LINEAR, {x.view(), w_t}, {y.view()});
  EXPECT_NE(s.message().find("unit innermost stride"), std::string::npos)
      << s.message();
  auto w_bad = F32({2, 4}, std::vector<double>(8, 1.0));
  EXPECT_FALSE(RunOp(TSR_OP_LINEAR, {x.view(), w_bad.view()}, {y.view()}).ok());
  // y may not alias x.
  auto w = F32({3, 3}, std::vector<double>(9, 1.0));
  auto sq = F32({3, 3}, std::vector<double>(9, 1.0));
  EXPECT_FALSE(RunOp(TSR_OP_LINEAR, {sq.view(), w.view()}, {sq.view()}).ok());
}

}  // namespace
}  // namespace tessera::reference
