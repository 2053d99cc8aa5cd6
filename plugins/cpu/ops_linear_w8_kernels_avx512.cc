// The AVX-512 (F/BW/VL) kernels of linear v2 (ops_linear_w8_kernels.h):
// MR x 4 register tiles (MR <= 4 x rows, 4 weight rows) of 16-lane f32
// accumulators. 16 int8 weights are one 128-bit load, sign-extended
// (vpmovsxbd) and converted (vcvtdq2ps), multiplied by the group's scale
// (G % 16 == 0; with G == K the scale multiplies the finished sum instead)
// and FMA-ed with x. The K tail of G == K is one masked byte load. Compiled
// for avx512 by a target pragma: only called when cpuid reports it.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>

#include "ops_linear_int8_rows.h"
#include "ops_linear_w8_kernels.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma")

namespace tessera::cpu {
namespace {

inline __m512 WidenI8(__m128i v) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v)); }

// out[r * ldo + j] = sum_k x_r[k] * w_j[k] * s_j[k / G] for r < MR, j < nr
// (w and s have 4 valid pointers; padded ones repeat a real row).
template <int MR, bool kPerChannel>
inline __attribute__((always_inline)) void Tile(const float* x, int64_t ldx,
                                                const int8_t* const* w, const float* const* s,
                                                int64_t k, int64_t group, int nr, float* out,
                                                int64_t ldo, const int8_t* const* pf) {
  __m512 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  if constexpr (kPerChannel) {
    const int64_t k16 = k & ~int64_t{15};
    for (int64_t i = 0; i < k16; i += 16) {
      __m512 xv[MR];
      for (int r = 0; r < MR; ++r) xv[r] = _mm512_loadu_ps(x + r * ldx + i);
      if ((i & 63) == 0) {
        for (int j = 0; j < 4; ++j) {
          _mm_prefetch(reinterpret_cast<const char*>(pf[j] + i), _MM_HINT_T1);
        }
      }
      for (int j = 0; j < 4; ++j) {
        const __m512 wv = WidenI8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[j] + i)));
        for (int r = 0; r < MR; ++r) acc[r][j] = _mm512_fmadd_ps(xv[r], wv, acc[r][j]);
      }
    }
    if (k16 < k) {
      const __mmask16 mask = static_cast<__mmask16>((1u << (k - k16)) - 1u);
      __m512 xv[MR];
      for (int r = 0; r < MR; ++r) xv[r] = _mm512_maskz_loadu_ps(mask, x + r * ldx + k16);
      for (int j = 0; j < 4; ++j) {
        const __m512 wv = WidenI8(_mm_maskz_loadu_epi8(mask, w[j] + k16));
        for (int r = 0; r < MR; ++r) acc[r][j] = _mm512_fmadd_ps(xv[r], wv, acc[r][j]);
      }
    }
  } else {
    for (int64_t g0 = 0, gi = 0; g0 < k; g0 += group, ++gi) {
      __m512 sv[4];
      for (int j = 0; j < 4; ++j) sv[j] = _mm512_set1_ps(s[j][gi]);
      for (int64_t i = g0; i < g0 + group; i += 16) {
        __m512 xv[MR];
        for (int r = 0; r < MR; ++r) xv[r] = _mm512_loadu_ps(x + r * ldx + i);
        if ((i & 63) == 0) {
          for (int j = 0; j < 4; ++j) {
            _mm_prefetch(reinterpret_cast<const char*>(pf[j] + i), _MM_HINT_T1);
          }
        }
        for (int j = 0; j < 4; ++j) {
          const __m512 wv = _mm512_mul_ps(
              WidenI8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[j] + i))), sv[j]);
          for (int r = 0; r < MR; ++r) acc[r][j] = _mm512_fmadd_ps(xv[r], wv, acc[r][j]);
        }
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) {
      float v = _mm512_reduce_add_ps(acc[r][j]);
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
    // pf: the next group of rows, fetched into L2 while this one streams.
    const Int8RowGroup g(w, ldw, s, lds, j0, n);
    const int nr = g.nr;
    const int8_t* const* wr = g.w;
    const float* const* sr = g.s;
    const int8_t* const* pf = g.pf;
    int64_t m = 0;
    for (; m + 4 <= rows; m += 4) {
      Tile<4, kPerChannel>(x + m * ldx, ldx, wr, sr, k, group, nr, out + m * ldo + j0, ldo,
                           m == 0 ? pf : wr);
    }
    const int64_t left = rows - m;
    const int8_t* const* p = m == 0 ? pf : wr;
    if (left == 3) Tile<3, kPerChannel>(x + m * ldx, ldx, wr, sr, k, group, nr, out + m * ldo + j0, ldo, p);
    if (left == 2) Tile<2, kPerChannel>(x + m * ldx, ldx, wr, sr, k, group, nr, out + m * ldo + j0, ldo, p);
    if (left == 1) Tile<1, kPerChannel>(x + m * ldx, ldx, wr, sr, k, group, nr, out + m * ldo + j0, ldo, p);
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

// dst [n, K] = w * s; G == K or G % 16 == 0 vectorised, any G handled.
void Dequant(const int8_t* w, int64_t ldw, const float* s, int64_t lds, int64_t n, int64_t k,
             int64_t group, float* dst) {
  for (int64_t j = 0; j < n; ++j) {
    const int8_t* wr = w + j * ldw;
    const float* sr = s + j * lds;
    float* d = dst + j * k;
    for (int64_t g0 = 0, gi = 0; g0 < k; g0 += group, ++gi) {
      const int64_t g1 = std::min(k, g0 + group);
      const __m512 sv = _mm512_set1_ps(sr[gi]);
      int64_t i = g0;
      for (; i + 16 <= g1; i += 16) {
        _mm512_storeu_ps(
            d + i,
            _mm512_mul_ps(WidenI8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wr + i))), sv));
      }
      if (i < g1) {
        const __mmask16 mask = static_cast<__mmask16>((1u << (g1 - i)) - 1u);
        _mm512_mask_storeu_ps(d + i, mask,
                              _mm512_mul_ps(WidenI8(_mm_maskz_loadu_epi8(mask, wr + i)), sv));
      }
    }
  }
}

}  // namespace
}  // namespace tessera::cpu

#pragma GCC pop_options
#pragma GCC diagnostic pop

namespace tessera::cpu {

const LinearW8Kernels& Avx512LinearW8Kernels() {
  static const LinearW8Kernels kernels{&Block, 16, &Dequant};
  return kernels;
}

}  // namespace tessera::cpu

#endif  // x86-64
