// The linear v3 (w8a8) kernel tables (ops_linear_w8a8_kernels.h), each one
// this CPU runs — scalar, avx2, avx512 (BW: vpmaddubsw) and avx512vnni
// (vpdpbusd) — called directly, so a VNNI machine still tests the BW
// kernels:
//  - quantize is bit-identical to the scalar path (and to the contract's
//    f32 steps written out here) on rows with exact ties, an all-zero block,
//    a block of one huge value, and G = 32, 64, 96 and K;
//  - block equals f64 math on the quantised values (the int sums are
//    exact, so only f32 accumulation differs) for rows 1..9 (the 4-row tile
//    tails), n 1..67 (4-row weight groups), K % 64 == 32 (the half-step
//    tail), G == K (the per-channel blocks: int sums over the whole row),
//    and extreme weights (-128, 127) that would overflow a careless
//    i16 pair sum;
//  - block_w4 (linear v4's packed 4-bit weights) equals f64 math on the
//    unpacked nibbles - 8 for the same tile tails, K % 64 == 32, G = 32,
//    64, 96 and K, and the extreme nibbles (0 = -8 and 15 = 7) against
//    x = +-127;
//  - block_w6 (linear v5's Q6_K super-blocks) equals f64 math on the
//    weights decoded as llama.cpp's dequantize_row_q6_K loop does, for
//    tile tails, several super-blocks per row, G = 32 (the SIMD paths) and
//    64, 128, 256 (scalar), and the extremes u = 0 / 63 with sc = -128 /
//    127 against x = +-127.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kit/half.h"
#include "ops_linear_w8a8_kernels.h"

namespace tessera::cpu {
namespace {

std::vector<const LinearW8A8Kernels*> Tables() {
  std::vector<const LinearW8A8Kernels*> out = {&ScalarLinearW8A8Kernels()};
#if defined(__x86_64__) && defined(__GNUC__)
  if (CpuSupports(CpuIsa::kAvx2)) out.push_back(&Avx2LinearW8A8Kernels());
  if (CpuSupports(CpuIsa::kAvx512)) out.push_back(&Avx512LinearW8A8Kernels());
  if (CpuHasAvx512Vnni()) out.push_back(&Avx512VnniLinearW8A8Kernels());
#endif
  return out;
}

// The contract's quantisation of one block, spelled out.
void ContractQuantize(const float* x, int64_t g, int8_t* q, float* s) {
  float amax = 0.0f;
  for (int64_t i = 0; i < g; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
  *s = amax / 127.0f;
  for (int64_t i = 0; i < g; ++i) q[i] = static_cast<int8_t>(std::nearbyint(x[i] * inv));
}

TEST(LinearW8A8KernelsTest, QuantizeIsTheContractOnEveryPath) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (int64_t k : {32, 96, 192, 1024}) {
    for (int64_t g : {int64_t{32}, int64_t{64}, int64_t{96}, k}) {
      if (k % g != 0) continue;
      const int64_t rows = 3, groups = k / g;
      std::vector<float> x(rows * k);
      for (float& v : x) v = dist(rng);
      for (int64_t i = 0; i < g; ++i) x[i] = 0.0f;  // an all-zero block
      x[k + 1] = 1e30f;                             // one huge value
      // Exact ties: a = 127 makes x * (127 / a) = x, so x.5 values tie.
      x[2 * k] = 127.0f;
      for (int64_t i = 1; i < std::min<int64_t>(g, 12); ++i) x[2 * k + i] = i + 0.5f;
      std::vector<int8_t> want_q(rows * k);
      std::vector<float> want_s(rows * groups);
      for (int64_t m = 0; m < rows; ++m) {
        for (int64_t b = 0; b < groups; ++b) {
          ContractQuantize(&x[m * k + b * g], g, &want_q[m * k + b * g], &want_s[m * groups + b]);
        }
      }
      EXPECT_EQ(want_q[2 * k + 1], 2);  // 1.5 -> 2 (ties to even)
      EXPECT_EQ(want_q[2 * k + 2], 2);  // 2.5 -> 2
      for (const LinearW8A8Kernels* t : Tables()) {
        SCOPED_TRACE(::testing::Message() << t->name << " K=" << k << " G=" << g);
        std::vector<int8_t> q(rows * k, 99);
        std::vector<float> s(rows * groups, -1.0f);
        t->quantize(x.data(), k, rows, k, g, q.data(), k, s.data(), groups);
        EXPECT_EQ(q, want_q);
        EXPECT_EQ(s, want_s);
      }
    }
  }
}

// x rows 1..9 (the 4-row tile tails), n 1..67 (4-row weight groups), K %
// 64 == 32 (the half-step tail), G = 32, 64, 96 and K (the per-channel
// blocks: int sums over the row), K past whole 512-element chunks. Every K
// and G is a multiple of 32, so the 4-bit blocks take them too.
struct BlockShape {
  int64_t rows, n, k, g;
};
constexpr BlockShape kBlockShapes[] = {
    {1, 1, 32, 32},   {1, 67, 1024, 32}, {2, 5, 96, 32},    {3, 9, 160, 32},
    {4, 8, 64, 64},   {5, 13, 192, 96},  {6, 4, 128, 128},  {9, 67, 224, 32},
    {7, 3, 32, 32},   {9, 10, 224, 224}, {4, 67, 1056, 1056}, {1, 5, 64, 64},
    // Long decode rows at G = 32: past 512 elements, then a half step.
    {2, 9, 1056, 32}, {1, 5, 576, 32}};

// The block's result in f64: out[m, j] = sum_b xs[m, b] * ws[j, b] *
// (sum_{k in b} xq[m, k] * weight(j, k)), [rows, n].
template <typename WeightAt>
std::vector<double> BlockF64(const BlockShape& sh, const std::vector<int8_t>& xq,
                             const std::vector<float>& xs, const std::vector<float>& ws,
                             WeightAt weight) {
  const int64_t groups = sh.k / sh.g;
  std::vector<double> want(sh.rows * sh.n);
  for (int64_t m = 0; m < sh.rows; ++m) {
    for (int64_t j = 0; j < sh.n; ++j) {
      double acc = 0;
      for (int64_t b = 0; b < groups; ++b) {
        int64_t dot = 0;
        for (int64_t i = b * sh.g; i < (b + 1) * sh.g; ++i) dot += xq[m * sh.k + i] * weight(j, i);
        acc += double{xs[m * groups + b]} * ws[j * groups + b] * static_cast<double>(dot);
      }
      want[m * sh.n + j] = acc;
    }
  }
  return want;
}

// out [rows, ldo] against BlockF64's `want` (f32 accumulation: 1e-5).
void ExpectBlockNear(const BlockShape& sh, const std::vector<float>& out, int64_t ldo,
                     const std::vector<double>& want) {
  for (int64_t m = 0; m < sh.rows; ++m) {
    for (int64_t j = 0; j < sh.n; ++j) {
      const double e = want[m * sh.n + j];
      EXPECT_NEAR(out[m * ldo + j], e, 1e-5 * (std::fabs(e) + 1.0)) << "m=" << m << " j=" << j;
    }
  }
}

TEST(LinearW8A8KernelsTest, BlockMatchesF64OnEveryPath) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> qdist(-127, 127);
  std::uniform_real_distribution<float> sdist(0.001f, 0.02f);
  for (const BlockShape& sh : kBlockShapes) {
    const int64_t groups = sh.k / sh.g, ldw = sh.k + 8;
    std::vector<int8_t> xq(sh.rows * sh.k), w(sh.n * ldw);
    std::vector<float> xs(sh.rows * groups), ws(sh.n * groups);
    for (int8_t& v : xq) v = static_cast<int8_t>(qdist(rng));
    for (int8_t& v : w) v = static_cast<int8_t>(qdist(rng));
    for (float& v : xs) v = sdist(rng);
    for (float& v : ws) v = sdist(rng);
    // Extremes: x = +-127 against w = -128 / 127 (a pair sum of 32512).
    for (int64_t i = 0; i < std::min<int64_t>(sh.k, 32); ++i) {
      xq[i] = i % 2 ? 127 : -127;
      w[i] = i % 2 ? 127 : -128;
    }
    const std::vector<double> want =
        BlockF64(sh, xq, xs, ws, [&](int64_t j, int64_t i) { return int{w[j * ldw + i]}; });
    for (const LinearW8A8Kernels* t : Tables()) {
      if (sh.g % t->group_multiple != 0) continue;
      SCOPED_TRACE(::testing::Message() << t->name << " rows=" << sh.rows << " n=" << sh.n
                                        << " K=" << sh.k << " G=" << sh.g);
      const int64_t ldo = sh.n + 3;
      std::vector<float> out(sh.rows * ldo, -7.0f);
      t->block(xq.data(), sh.k, xs.data(), groups, sh.rows, w.data(), ldw, ws.data(), groups,
               sh.n, sh.k, sh.g, out.data(), ldo);
      ExpectBlockNear(sh, out, ldo, want);
    }
  }
}

TEST(LinearW8A8KernelsTest, Block4BitMatchesF64OnEveryPath) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> qdist(-127, 127), udist(0, 255);
  std::uniform_real_distribution<float> sdist(0.001f, 0.02f);
  for (const BlockShape& sh : kBlockShapes) {
    const int64_t groups = sh.k / sh.g, ldw = sh.k / 2 + 8;  // bytes
    std::vector<int8_t> xq(sh.rows * sh.k), w(sh.n * ldw);
    std::vector<float> xs(sh.rows * groups), ws(sh.n * groups);
    std::vector<uint16_t> ws16(sh.n * groups);  // the kernels' f16 scales
    for (int8_t& v : xq) v = static_cast<int8_t>(qdist(rng));
    for (int8_t& v : w) v = static_cast<int8_t>(udist(rng));
    for (float& v : xs) v = sdist(rng);
    for (size_t i = 0; i < ws.size(); ++i) {
      ws16[i] = plugin_kit::F32ToF16(sdist(rng));
      ws[i] = plugin_kit::F16ToF32(ws16[i]);
    }
    // Extremes: x = +-127 against nibbles 0 (-8) and 15 (7).
    for (int64_t i = 0; i < 16; ++i) {
      xq[i] = i % 2 ? 127 : -127;
      xq[i + 16] = i % 2 ? -127 : 127;
      w[i] = static_cast<int8_t>(i % 2 ? 0xF0 : 0x0F);
    }
    auto weight = [&](int64_t j, int64_t i) {
      const auto byte = static_cast<uint8_t>(w[j * ldw + (i / 32) * 16 + i % 16]);
      return (i % 32 < 16 ? byte & 15 : byte >> 4) - 8;
    };
    const std::vector<double> want = BlockF64(sh, xq, xs, ws, weight);
    for (const LinearW8A8Kernels* t : Tables()) {
      SCOPED_TRACE(::testing::Message() << t->name << " rows=" << sh.rows << " n=" << sh.n
                                        << " K=" << sh.k << " G=" << sh.g);
      ASSERT_NE(t->block_w4, nullptr);
      const int64_t ldo = sh.n + 3;
      std::vector<float> out(sh.rows * ldo, -7.0f);
      std::vector<int8_t> xq_t = xq;  // in the table's x order
      if (t->permute_w4 != nullptr) t->permute_w4(xq_t.data(), sh.k, sh.rows, sh.k);
      t->block_w4(xq_t.data(), sh.k, xs.data(), groups, sh.rows, w.data(), ldw, ws16.data(),
                  groups, sh.n, sh.k, sh.g, out.data(), ldo);
      ExpectBlockNear(sh, out, ldo, want);
    }
  }
}

// Row `row` (208-byte super-blocks) decoded the way llama.cpp's
// dequantize_row_q6_K loops: sc * (q - 32) per weight, [K] (d applied by
// the caller).
std::vector<int> DecodeQ6Row(const uint8_t* row, int64_t k) {
  std::vector<int> out(static_cast<size_t>(k));
  for (int64_t c = 0; c < k / 256; ++c) {
    const uint8_t* ql = row + c * 208;
    const uint8_t* qh = ql + 128;
    const auto* sc = reinterpret_cast<const int8_t*>(ql + 192);
    int* y = out.data() + c * 256;
    for (int n = 0; n < 256; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        y[l] = sc[is] * (((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
        y[l + 32] = sc[is + 2] * (((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
        y[l + 64] = sc[is + 4] * (((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        y[l + 96] = sc[is + 6] * (((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
  return out;
}

TEST(LinearW8A8KernelsTest, Block6BitMatchesF64OnEveryPath) {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> qdist(-127, 127), udist(0, 255), scdist(-128, 127);
  std::uniform_real_distribution<float> sdist(0.001f, 0.02f);
  constexpr BlockShape kShapes[] = {{1, 1, 256, 32},   {1, 67, 1024, 32}, {2, 5, 512, 32},
                                    {3, 9, 256, 32},   {9, 67, 768, 32},  {2, 9, 1280, 32},
                                    {5, 13, 256, 32},  {1, 5, 512, 64},   {3, 6, 512, 128},
                                    {2, 3, 768, 256}};
  for (const BlockShape& sh : kShapes) {
    const int64_t groups = sh.k / sh.g, supers = sh.k / 256;
    const int64_t ldw = supers * 208 + 16, ldwd = supers + 1;
    std::vector<int8_t> xq(sh.rows * sh.k);
    std::vector<uint8_t> w(sh.n * ldw);
    std::vector<float> xs(sh.rows * groups);
    std::vector<uint16_t> wd(sh.n * ldwd);
    for (int8_t& v : xq) v = static_cast<int8_t>(qdist(rng));
    for (uint8_t& v : w) v = static_cast<uint8_t>(udist(rng));
    for (int64_t j = 0; j < sh.n; ++j) {
      for (int64_t c = 0; c < supers; ++c) {
        for (int i = 0; i < 16; ++i) {
          w[j * ldw + c * 208 + 192 + i] = static_cast<uint8_t>(scdist(rng));
        }
      }
    }
    for (float& v : xs) v = sdist(rng);
    for (uint16_t& v : wd) v = plugin_kit::F32ToF16(sdist(rng));
    // Extremes in row 0's first 32 weights: u = 63 / 0 (31 / -32) with
    // sc = -128 and 127, against x = +-127.
    for (int l = 0; l < 32; ++l) {
      w[l] = static_cast<uint8_t>((w[l] & 0xF0) | (l % 2 ? 0x0 : 0xF));
      w[128 + l] = static_cast<uint8_t>((w[128 + l] & 0xFC) | (l % 2 ? 0 : 3));
      xq[l] = l % 2 ? -127 : 127;
    }
    w[192] = static_cast<uint8_t>(int8_t{-128});
    w[193] = 127;
    std::vector<std::vector<int>> decoded;
    for (int64_t j = 0; j < sh.n; ++j) decoded.push_back(DecodeQ6Row(&w[j * ldw], sh.k));
    std::vector<float> ws(sh.n * groups);  // each x block's d
    for (int64_t j = 0; j < sh.n; ++j) {
      for (int64_t b = 0; b < groups; ++b) {
        ws[j * groups + b] = plugin_kit::F16ToF32(wd[j * ldwd + b * sh.g / 256]);
      }
    }
    const std::vector<double> want =
        BlockF64(sh, xq, xs, ws, [&](int64_t j, int64_t i) { return decoded[j][i]; });
    // sc * (u - 32) reaches 4096, so block terms are large and cancel: f32
    // accumulation is held to 1e-6 of the terms' magnitude.
    std::vector<int8_t> xq_abs(xq.size());
    for (size_t i = 0; i < xq.size(); ++i) xq_abs[i] = static_cast<int8_t>(std::abs(xq[i]));
    const std::vector<double> magnitude = BlockF64(
        sh, xq_abs, xs, ws, [&](int64_t j, int64_t i) { return std::abs(decoded[j][i]); });
    for (const LinearW8A8Kernels* t : Tables()) {
      if (t->w6_group != 0 && sh.g != t->w6_group) continue;
      SCOPED_TRACE(::testing::Message() << t->name << " rows=" << sh.rows << " n=" << sh.n
                                        << " K=" << sh.k << " G=" << sh.g);
      ASSERT_NE(t->block_w6, nullptr);
      const int64_t ldo = sh.n + 3;
      std::vector<float> out(sh.rows * ldo, -7.0f);
      t->block_w6(xq.data(), sh.k, xs.data(), groups, sh.rows, w.data(), ldw, wd.data(), ldwd,
                  sh.n, sh.k, sh.g, out.data(), ldo);
      for (int64_t m = 0; m < sh.rows; ++m) {
        for (int64_t j = 0; j < sh.n; ++j) {
          const double e = want[m * sh.n + j];
          const double tol = 1e-6 * std::fabs(magnitude[m * sh.n + j]) + 1e-5 * std::fabs(e);
          EXPECT_NEAR(out[m * ldo + j], e, tol) << "m=" << m << " j=" << j;
        }
      }
    }
  }
}

TEST(LinearW8A8KernelsTest, AvxPathsUseTheirSimdBlocks) {
  for (const LinearW8A8Kernels* t : Tables()) {
    if (t != &ScalarLinearW8A8Kernels()) {
      EXPECT_EQ(t->group_multiple, 32) << t->name;
      EXPECT_EQ(t->w6_group, 32) << t->name;
      EXPECT_NE(t->block_w6, ScalarLinearW8A8Kernels().block_w6) << t->name;
    }
  }
  EXPECT_EQ(&LinearW8A8KernelsFor(CpuIsa::kScalar), &ScalarLinearW8A8Kernels());
  // Every kernel this CPU can run is under test (4 on an AVX512_VNNI one).
  size_t want = 1;
#if defined(__x86_64__) && defined(__GNUC__)
  want += (CpuSupports(CpuIsa::kAvx2) ? 1 : 0) + (CpuSupports(CpuIsa::kAvx512) ? 1 : 0) +
          (CpuHasAvx512Vnni() ? 1 : 0);
#endif
  EXPECT_EQ(Tables().size(), want);
}

}  // namespace
}  // namespace tessera::cpu
