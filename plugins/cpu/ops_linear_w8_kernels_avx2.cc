// The AVX2 (+FMA) kernels of linear v2 (ops_linear_w8_kernels.h): MR x 4
// register tiles (MR <= 2 x rows, 4 weight rows) of 8-lane f32
// accumulators. 8 int8 weights are one 64-bit load, sign-extended
// (vpmovsxbd) and converted (vcvtdq2ps), multiplied by the group's scale
// (G % 8 == 0; with G == K the scale multiplies the finished sum instead)
// and FMA-ed with x. The K tail of G == K (K % 8) runs scalar. Compiled for
// avx2 by a target pragma: only called when cpuid reports AVX2 and FMA.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ops_linear_int8_rows.h"
#include "ops_linear_w8_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace tessera::cpu {
namespace {

inline __m256 Load8(const int8_t* p) {
  int64_t bits;
  std::memcpy(&bits, p, 8);
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bits)));
}

inline float HSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int MR, bool kPerChannel>
inline __attribute__((always_inline)) void Tile(const float* x, int64_t ldx,
                                                const int8_t* const* w, const float* const* s,
                                                int64_t k, int64_t group, int nr, float* out,
                                                int64_t ldo) {
  __m256 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  int64_t k8 = k;
  if constexpr (kPerChannel) {
    k8 = k & ~int64_t{7};
    for (int64_t i = 0; i < k8; i += 8) {
      __m256 xv[MR];
      for (int r = 0; r < MR; ++r) xv[r] = _mm256_loadu_ps(x + r * ldx + i);
      for (int j = 0; j < 4; ++j) {
        const __m256 wv = Load8(w[j] + i);
        for (int r = 0; r < MR; ++r) acc[r][j] = _mm256_fmadd_ps(xv[r], wv, acc[r][j]);
      }
    }
  } else {
    for (int64_t g0 = 0, gi = 0; g0 < k; g0 += group, ++gi) {
      __m256 sv[4];
      for (int j = 0; j < 4; ++j) sv[j] = _mm256_set1_ps(s[j][gi]);
      for (int64_t i = g0; i < g0 + group; i += 8) {
        __m256 xv[MR];
        for (int r = 0; r < MR; ++r) xv[r] = _mm256_loadu_ps(x + r * ldx + i);
        for (int j = 0; j < 4; ++j) {
          const __m256 wv = _mm256_mul_ps(Load8(w[j] + i), sv[j]);
          for (int r = 0; r < MR; ++r) acc[r][j] = _mm256_fmadd_ps(xv[r], wv, acc[r][j]);
        }
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) {
      float v = HSum(acc[r][j]);
      for (int64_t i = k8; i < k; ++i) v += x[r * ldx + i] * static_cast<float>(w[j][i]);
      if constexpr (kPerChannel) v *= s[j][0];
      out[r * ldo + j] = v;
    }
  }
}

template <bool kPerChannel>
void BlockImpl(const float* x, int64_t ldx, int64_t rows, const int8_t* w, int64_t ldw,
               const float* s, int64_t lds, int64_t n, int64_t k, int64_t group, float* out,
               int64_t ldo) {
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const Int8RowGroup g(w, ldw, s, lds, j0, n);
    int64_t m = 0;
    for (; m + 2 <= rows; m += 2) {
      Tile<2, kPerChannel>(x + m * ldx, ldx, g.w, g.s, k, group, g.nr, out + m * ldo + j0, ldo);
    }
    if (m < rows) {
      Tile<1, kPerChannel>(x + m * ldx, ldx, g.w, g.s, k, group, g.nr, out + m * ldo + j0, ldo);
    }
  }
}

void Block(const float* x, int64_t ldx, int64_t rows, const int8_t* w, int64_t ldw,
           const float* s, int64_t lds, int64_t n, int64_t k, int64_t group, float* out,
           int64_t ldo) {
  if (group >= k) {
    BlockImpl<true>(x, ldx, rows, w, ldw, s, lds, n, k, group, out, ldo);
  } else {
    BlockImpl<false>(x, ldx, rows, w, ldw, s, lds, n, k, group, out, ldo);
  }
}

void Dequant(const int8_t* w, int64_t ldw, const float* s, int64_t lds, int64_t n, int64_t k,
             int64_t group, float* dst) {
  for (int64_t j = 0; j < n; ++j) {
    const int8_t* wr = w + j * ldw;
    const float* sr = s + j * lds;
    float* d = dst + j * k;
    for (int64_t g0 = 0, gi = 0; g0 < k; g0 += group, ++gi) {
      const int64_t g1 = std::min(k, g0 + group);
      const __m256 sv = _mm256_set1_ps(sr[gi]);
      int64_t i = g0;
      for (; i + 8 <= g1; i += 8) _mm256_storeu_ps(d + i, _mm256_mul_ps(Load8(wr + i), sv));
      for (; i < g1; ++i) d[i] = static_cast<float>(wr[i]) * sr[gi];
    }
  }
}

}  // namespace
}  // namespace tessera::cpu

#pragma GCC pop_options

namespace tessera::cpu {

const LinearW8Kernels& Avx2LinearW8Kernels() {
  static const LinearW8Kernels kernels{&Block, 8, &Dequant};
  return kernels;
}

}  // namespace tessera::cpu

#endif  // x86-64
