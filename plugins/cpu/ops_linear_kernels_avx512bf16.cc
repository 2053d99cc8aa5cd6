// The AVX512_BF16 linear block kernel (ops_linear_kernels.h) for bf16 x
// times bf16 w: 4x4 (or, for 5..16 rows, 8x2) register tiles of 16-lane
// f32 accumulators fed by vdpbf16ps (32 bf16 products per instruction,
// summed pairwise into f32);
// the K tail (K % 32) is one masked step. The other weight types use the
// avx512 kernels. Compiled for avx512bf16 by a target pragma: only called
// when cpuid reports it.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>

#include "ops_linear_kernels.h"

// GCC 12 warns falsely inside _mm512_reduce_add_ps (an undefined vector).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")

namespace tessera::cpu {
namespace {

inline __m512 Dp(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh&>(a), reinterpret_cast<__m512bh&>(b));
}

// {sum(a), sum(b), sum(c), sum(d)}: four horizontal sums at once (about a
// third of the shuffles of four _mm512_reduce_add_ps).
inline __m128 Sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 abcd = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 h =
      _mm256_add_ps(_mm512_castps512_ps256(abcd),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(abcd), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// out[r * ldo + j] = dot(x_r, w_j) over k for r < MR, j < nr <= NR (w has
// NR valid pointers; the padded ones repeat a real row). pf: rows to fetch
// into L2 meanwhile (NR pointers).
template <int MR, int NR>
inline __attribute__((always_inline)) void Tile(const uint16_t* x, int64_t ldx,
                                                const uint16_t* const* w, int64_t k, int nr,
                                                float* out, int64_t ldo,
                                                const uint16_t* const* pf) {
  __m512 acc[MR][NR];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < NR; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const int64_t k32 = k & ~int64_t{31};
  for (int64_t i = 0; i < k32; i += 32) {
    for (int j = 0; j < NR; ++j) {
      const __m512i wv = _mm512_loadu_si512(w[j] + i);
      _mm_prefetch(reinterpret_cast<const char*>(pf[j] + i), _MM_HINT_T1);
      for (int r = 0; r < MR; ++r) {
        acc[r][j] = Dp(acc[r][j], _mm512_loadu_si512(x + r * ldx + i), wv);
      }
    }
  }
  if (k32 < k) {
    const __mmask32 mask = static_cast<__mmask32>((uint64_t{1} << (k - k32)) - 1u);
    for (int j = 0; j < NR; ++j) {
      const __m512i wv = _mm512_maskz_loadu_epi16(mask, w[j] + k32);
      for (int r = 0; r < MR; ++r) {
        acc[r][j] = Dp(acc[r][j], _mm512_maskz_loadu_epi16(mask, x + r * ldx + k32), wv);
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    if constexpr (NR == 4) {
      const __m128 s = Sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
      if (nr == 4) {
        _mm_storeu_ps(out + r * ldo, s);
        continue;
      }
      alignas(16) float t[4];
      _mm_store_ps(t, s);
      for (int j = 0; j < nr; ++j) out[r * ldo + j] = t[j];
    } else {
      for (int j = 0; j < nr; ++j) out[r * ldo + j] = _mm512_reduce_add_ps(acc[r][j]);
    }
  }
}

// Rows [m, rows) of x against one group of NR weight rows, in tiles of at
// most MR x rows (the remainder by a smaller tile).
template <int MR, int NR>
inline __attribute__((always_inline)) void Rows(const uint16_t* x, int64_t ldx, int64_t rows,
                                                const uint16_t* const* wr,
                                                const uint16_t* const* pf, int64_t k, int nr,
                                                float* out, int64_t ldo) {
  int64_t m = 0;
  for (; m + MR <= rows; m += MR) {
    Tile<MR, NR>(x + m * ldx, ldx, wr, k, nr, out + m * ldo, ldo, m == 0 ? pf : wr);
  }
  if constexpr (MR > 1) {
    if (m < rows) {
      Rows<MR - 1, NR>(x + m * ldx, ldx, rows - m, wr, m == 0 ? pf : wr, k, nr, out + m * ldo, ldo);
    }
  }
}

// Groups of NR weight rows, each meeting all `rows` x rows in MR-row tiles.
template <int MR, int NR>
void Groups(const uint16_t* x, int64_t ldx, int64_t rows, const uint16_t* w, int64_t ldw, int64_t n,
            int64_t k, float* out, int64_t ldo) {
  for (int64_t j0 = 0; j0 < n; j0 += NR) {
    const int nr = static_cast<int>(std::min<int64_t>(NR, n - j0));
    const uint16_t* wr[NR];
    for (int j = 0; j < NR; ++j) wr[j] = w + (j0 + std::min(j, nr - 1)) * ldw;
    // The next group of rows, fetched into L2 while this one is used
    // (memory-bound GEMV needs more requests in flight than the hardware
    // prefetcher starts); the last group re-touches its own rows.
    const uint16_t* pf[NR];
    for (int j = 0; j < NR; ++j) pf[j] = j0 + NR + j < n ? wr[j] + NR * ldw : wr[j];
    Rows<MR, NR>(x, ldx, rows, wr, pf, k, nr, out + j0, ldo);
  }
}

// Decode-sized blocks (5..8 rows, 16 at most in two passes) use 8x2 tiles:
// each weight row is streamed through the registers once for all rows.
// Larger blocks use 4x4 tiles: half the x traffic from L2 per weight row.
void BlockBf16(const uint16_t* x, int64_t ldx, int64_t rows, const uint16_t* w, int64_t ldw,
               int64_t n, int64_t k, float* out, int64_t ldo) {
  if (rows > 4 && rows <= 16) {
    Groups<8, 2>(x, ldx, rows, w, ldw, n, k, out, ldo);
  } else {
    Groups<4, 4>(x, ldx, rows, w, ldw, n, k, out, ldo);
  }
}

}  // namespace
}  // namespace tessera::cpu

#pragma GCC pop_options
#pragma GCC diagnostic pop

// The table is built by baseline code (the pragma above covers only the
// kernels themselves).
namespace tessera::cpu {

const LinearKernels& Avx512Bf16LinearKernels() {
  static const LinearKernels kernels = [] {
    LinearKernels t = Avx512LinearKernels();
    t.bf16_bf16 = &BlockBf16;
    return t;
  }();
  return kernels;
}

}  // namespace tessera::cpu

#endif  // x86-64
