// The AVX2 kernels of linear v3 (ops_linear_w8a8_kernels.h): MR x 4
// register tiles (MR <= 2 x rows, 4 weight rows) of 8-lane f32
// accumulators, one 32-byte block per step (G % 32 == 0). The int8 dot of a
// block is llama.cpp's AVX2 one: |w| (vpsignb w, w) times x carrying w's
// sign (vpsignb x, w) in vpmaddubsw (u8 x s8 pairs -> i16; |w| <= 128 and
// |x| <= 127 keep a pair sum below 2^15), widened by vpmaddwd with ones to
// 8 i32 lanes, converted, and FMA-ed with the block's two scales'
// product. Quantisation is the scalar one (x is small next to the weights).
// 4-bit weights (kW4, linear v4): a block's 16 bytes split into its low
// nibbles (weights 0-15) and high nibbles (16-31), u8 already, so
// vpmaddubsw takes them against x as they are and -8 * sum(x) (vpmaddubsw
// of 8s) is added after vpmaddwd.
// Compiled for avx2 by a target pragma: only called when cpuid reports it.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>

#include "ops_linear_int8_rows.h"
#include "ops_linear_w8a8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu {
namespace {

inline float HSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// A scale: f32, or f16 bits (4-bit weights' scales).
inline float ScaleAt(const float* s, int64_t b) { return s[b]; }
inline float ScaleAt(const uint16_t* s, int64_t b) { return _cvtsh_ss(s[b]); }

template <int MR, bool kW4, typename S>
inline __attribute__((always_inline)) void Tile(const int8_t* xq, int64_t ldxq, const float* xs,
                                                int64_t ldxs, const int8_t* const* w,
                                                const S* const* ws, int64_t k, int64_t group,
                                                int nr, float* out, int64_t ldo) {
  __m256 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  [[maybe_unused]] const __m256i low4 = _mm256_set1_epi8(0x0F);
  [[maybe_unused]] const __m256i eights = _mm256_set1_epi8(8);
  for (int64_t i = 0, b = 0, in_block = 0; i < k; i += 32) {
    __m256i wa[4], wv[4];
    for (int j = 0; j < 4; ++j) {
      if constexpr (kW4) {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[j] + i / 2));
        wa[j] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), low4);
      } else {
        wv[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[j] + i));
        wa[j] = _mm256_sign_epi8(wv[j], wv[j]);
      }
    }
    for (int r = 0; r < MR; ++r) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + r * ldxq + i));
      const float xsv = xs[r * ldxs + b];
      [[maybe_unused]] __m256i corr;  // kW4: 8 * (x's lane sums)
      if constexpr (kW4) corr = _mm256_madd_epi16(_mm256_maddubs_epi16(eights, xv), ones);
      for (int j = 0; j < 4; ++j) {
        __m256i sums;
        if constexpr (kW4) {
          sums = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(wa[j], xv), ones), corr);
        } else {
          sums = _mm256_madd_epi16(_mm256_maddubs_epi16(wa[j], _mm256_sign_epi8(xv, wv[j])), ones);
        }
        const __m256 dot = _mm256_cvtepi32_ps(sums);
        acc[r][j] = _mm256_fmadd_ps(dot, _mm256_set1_ps(xsv * ScaleAt(ws[j], b)), acc[r][j]);
      }
    }
    in_block += 32;
    if (in_block == group) {
      in_block = 0;
      ++b;
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) out[r * ldo + j] = HSum(acc[r][j]);
  }
}

template <bool kW4, typename S>
void BlockImpl(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
               const int8_t* w, int64_t ldw, const S* ws, int64_t ldws, int64_t n, int64_t k,
               int64_t group, float* out, int64_t ldo) {
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const RowGroup<S> g(w, ldw, ws, ldws, j0, n);
    int64_t m = 0;
    for (; m + 2 <= rows; m += 2) {
      Tile<2, kW4>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, g.w, g.s, k, group, g.nr,
              out + m * ldo + j0, ldo);
    }
    if (m < rows) {
      Tile<1, kW4>(xq + m * ldxq, ldxq, xs + m * ldxs, ldxs, g.w, g.s, k, group, g.nr,
              out + m * ldo + j0, ldo);
    }
  }
}

void Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
           const int8_t* w, int64_t ldw, const float* ws, int64_t ldws, int64_t n, int64_t k,
           int64_t group, float* out, int64_t ldo) {
  BlockImpl<false>(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, group, out, ldo);
}

void BlockW4(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
             const int8_t* w, int64_t ldw, const uint16_t* ws, int64_t ldws, int64_t n, int64_t k,
             int64_t group, float* out, int64_t ldo) {
  BlockImpl<true>(xq, ldxq, xs, ldxs, rows, w, ldw, ws, ldws, n, k, group, out, ldo);
}

}  // namespace
}  // namespace tessera::cpu

#pragma GCC pop_options

namespace tessera::cpu {

const LinearW8A8Kernels& Avx2LinearW8A8Kernels() {
  static const LinearW8A8Kernels kernels{"avx2", ScalarLinearW8A8Kernels().quantize, &Block, 32,
                                         &BlockW4};
  return kernels;
}

}  // namespace tessera::cpu

#endif  // x86-64
