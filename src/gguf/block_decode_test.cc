// DecodeRow on blocks packed here from chosen quantized values, scales and
// mins following the layouts in block_decode.h (every bit of every field
// exercised: all 16/32/64 levels, 6-bit scales above 15 so the K-quant
// packing of sub-blocks 4..7 matters). The test of the layouts against
// llama.cpp itself is tests/e2e/gguf_test.cc (files its quantizer wrote).
#include "gguf/block_decode.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/dtype.h"

namespace tessera::gguf {
namespace {

void PutHalf(std::vector<std::byte>& b, size_t at, float v) {
  const uint16_t h = FloatToF16(v);
  std::memcpy(b.data() + at, &h, 2);
}
void PutU8(std::vector<std::byte>& b, size_t at, int v) {
  b[at] = std::byte(uint8_t(v));
}

std::vector<float> Decode(TensorType type, const std::vector<std::byte>& b,
                          int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  DecodeRow(type, b.data(), n, out.data());
  return out;
}

TEST(BlockDecodeTest, Q8_0) {
  std::vector<std::byte> b(34);
  PutHalf(b, 0, 0.25f);
  for (int i = 0; i < 32; ++i) PutU8(b, 2 + i, int8_t(i * 8 - 128));
  auto y = Decode(TensorType::kQ8_0, b, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.25f * float(i * 8 - 128));
}

TEST(BlockDecodeTest, Q4_0AndQ4_1) {
  // q[i] = i % 16 in the low nibbles, 15 - i % 16 in the high ones.
  for (bool has_min : {false, true}) {
    const size_t qs = has_min ? 4 : 2;
    std::vector<std::byte> b(qs + 16);
    PutHalf(b, 0, 0.5f);
    if (has_min) PutHalf(b, 2, -3.0f);
    for (int i = 0; i < 16; ++i) PutU8(b, qs + i, i | ((15 - i) << 4));
    auto y = Decode(has_min ? TensorType::kQ4_1 : TensorType::kQ4_0, b, 32);
    for (int i = 0; i < 16; ++i) {
      const float lo = has_min ? 0.5f * i - 3.0f : 0.5f * (i - 8);
      const float hi = has_min ? 0.5f * (15 - i) - 3.0f : 0.5f * (7 - i);
      EXPECT_EQ(y[i], lo) << i;
      EXPECT_EQ(y[i + 16], hi) << i;
    }
  }
}

TEST(BlockDecodeTest, Q5_0AndQ5_1) {
  // 5-bit q[k] = (k * 7) % 32: low nibble in qs, bit 4 in qh bit k.
  for (bool has_min : {false, true}) {
    const size_t qh_at = has_min ? 4 : 2;
    std::vector<std::byte> b(qh_at + 4 + 16);
    PutHalf(b, 0, 2.0f);
    if (has_min) PutHalf(b, 2, 1.0f);
    uint32_t qh = 0;
    auto q = [](int k) { return (k * 7) % 32; };
    for (int k = 0; k < 32; ++k) qh |= uint32_t(q(k) >> 4) << k;
    std::memcpy(b.data() + qh_at, &qh, 4);
    for (int i = 0; i < 16; ++i) {
      PutU8(b, qh_at + 4 + i, (q(i) & 15) | ((q(i + 16) & 15) << 4));
    }
    auto y = Decode(has_min ? TensorType::kQ5_1 : TensorType::kQ5_0, b, 32);
    for (int k = 0; k < 32; ++k) {
      const float want = has_min ? 2.0f * q(k) + 1.0f : 2.0f * (q(k) - 16);
      EXPECT_EQ(y[k], want) << k;
    }
  }
}

// Packs the 6-bit scales and mins of 8 sub-blocks as Q4_K / Q5_K store
// them (block_decode.h).
void PackScales(std::vector<std::byte>& b, size_t at, const int sc[8],
                const int mn[8]) {
  uint8_t s[12] = {};
  for (int j = 0; j < 4; ++j) {
    s[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = uint8_t((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = uint8_t((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  std::memcpy(b.data() + at, s, 12);
}

TEST(BlockDecodeTest, Q4_KAndQ5_K) {
  const int sc[8] = {1, 63, 17, 32, 45, 16, 5, 60};
  const int mn[8] = {0, 9, 63, 31, 18, 47, 33, 2};
  for (bool five : {false, true}) {
    std::vector<std::byte> b(five ? 176 : 144);
    PutHalf(b, 0, 0.125f);
    PutHalf(b, 2, 0.0625f);
    PackScales(b, 4, sc, mn);
    // Element e = 32 j + l of sub-block j: q = (l + 3 j) % levels.
    const int levels = five ? 32 : 16;
    auto q = [&](int j, int l) { return (l + 3 * j) % levels; };
    const size_t qs = five ? 48 : 16;
    for (int pair = 0; pair < 4; ++pair) {
      for (int l = 0; l < 32; ++l) {
        const int lo = q(2 * pair, l), hi = q(2 * pair + 1, l);
        PutU8(b, qs + 32 * pair + l, (lo & 15) | ((hi & 15) << 4));
        if (five) {
          int bits = std::to_integer<int>(b[16 + l]);
          bits |= (lo >> 4) << (2 * pair);
          bits |= (hi >> 4) << (2 * pair + 1);
          PutU8(b, 16 + l, bits);
        }
      }
    }
    auto y = Decode(five ? TensorType::kQ5_K : TensorType::kQ4_K, b, 256);
    for (int j = 0; j < 8; ++j) {
      for (int l = 0; l < 32; ++l) {
        const float want =
            0.125f * float(sc[j]) * float(q(j, l)) - 0.0625f * float(mn[j]);
        EXPECT_EQ(y[32 * j + l], want) << "sub-block " << j << " element " << l;
      }
    }
  }
}

TEST(BlockDecodeTest, Q6_K) {
  std::vector<std::byte> b(210);
  const int8_t sc[16] = {1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -128};
  std::memcpy(b.data() + 192, sc, 16);
  PutHalf(b, 208, 0.5f);
  // 6-bit value of element e: (e * 5) % 64.
  auto q = [](int e) { return (e * 5) % 64; };
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      int h = 0;
      for (int k = 0; k < 4; ++k) {
        const int v = q(128 * half + 32 * k + l);
        const size_t at = size_t(64 * half + l + 32 * (k & 1));
        int byte = std::to_integer<int>(b[at]);
        byte |= k < 2 ? (v & 15) : ((v & 15) << 4);
        PutU8(b, at, byte);
        h |= (v >> 4) << (2 * k);
      }
      PutU8(b, size_t(128 + 32 * half + l), h);
    }
  }
  auto y = Decode(TensorType::kQ6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int half = e / 128, k = (e % 128) / 32, l = e % 32;
    const float want = 0.5f * float(sc[8 * half + 2 * k + l / 16]) *
                       float(q(e) - 32);
    EXPECT_EQ(y[e], want) << e;
  }
}

TEST(BlockDecodeTest, PlainTypesAndSeveralBlocks) {
  std::vector<std::byte> b(4);
  const uint16_t one = FloatToBf16(1.5f), two = FloatToBf16(-2.0f);
  std::memcpy(b.data(), &one, 2);
  std::memcpy(b.data() + 2, &two, 2);
  EXPECT_EQ(Decode(TensorType::kBF16, b, 2), (std::vector<float>{1.5f, -2.0f}));
  // Two Q8_0 blocks: the second starts at byte 34.
  std::vector<std::byte> q(68, std::byte{0});
  PutHalf(q, 0, 1.0f);
  PutHalf(q, 34, 3.0f);
  PutU8(q, 2 + 5, 7);
  PutU8(q, 36 + 5, 7);
  auto y = Decode(TensorType::kQ8_0, q, 64);
  EXPECT_EQ(y[5], 7.0f);
  EXPECT_EQ(y[37], 21.0f);
}

}  // namespace
}  // namespace tessera::gguf
