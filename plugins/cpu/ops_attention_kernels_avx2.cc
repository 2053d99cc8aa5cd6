// The AVX2 (+FMA) paged-attention block kernels (ops_attention_kernels.h),
// the 8-lane counterparts of ops_attention_kernels_avx512.cc.
// scores: 3 query rows x 32 keys of accumulators (12 ymm), one broadcast of
// q and four loads of Kt per step over d. scores_from_rows: 2 rows x 4 keys
// of dot-product accumulators, summed horizontally at the end.
// softmax_accumulate: the block's probabilities with a vector exp (range
// reduction to 2^n * e^f, degree-6 polynomial for e^f, 2^n built in the
// exponent bits; ~2 ulp), then acc += P V for two rows at a time over
// 32-column slices of d (8 ymm accumulators, each V load feeding two FMAs).
// Column tails (d % 8) use vmaskmovps. Compiled for avx2 by a target
// pragma: only called when cpuid reports AVX2 and FMA.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops_attention_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace tessera::cpu {
namespace {

constexpr int64_t kB = kAttentionKeyBlock;
static_assert(kB == 32, "the kernels hold a block's scores in four ymm registers");

// Lane mask for the first `lanes` of 8 (lanes clamped to [0, 8]).
inline __m256i LaneMask(int64_t lanes) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(std::clamp<int64_t>(lanes, 0, 8))),
                            idx);
}

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float HorizontalMax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int R>
inline void ScoreRows(const float* q, int64_t d, const float* kt, float* s) {
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int u = 0; u < 4; ++u) acc[r][u] = _mm256_setzero_ps();
  }
  for (int64_t c = 0; c < d; ++c) {
    __m256 k[4];
    for (int u = 0; u < 4; ++u) k[u] = _mm256_loadu_ps(kt + c * kB + 8 * u);
    for (int r = 0; r < R; ++r) {
      const __m256 a = _mm256_broadcast_ss(q + r * d + c);
      for (int u = 0; u < 4; ++u) acc[r][u] = _mm256_fmadd_ps(a, k[u], acc[r][u]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int u = 0; u < 4; ++u) _mm256_storeu_ps(s + r * kB + 8 * u, acc[r][u]);
  }
}

void Scores(const float* q, int64_t mq, int64_t d, const float* kt, float* s) {
  int64_t i = 0;
  for (; i + 3 <= mq; i += 3) ScoreRows<3>(q + i * d, d, kt, s + i * kB);
  switch (mq - i) {
    case 2: ScoreRows<2>(q + i * d, d, kt, s + i * kB); break;
    case 1: ScoreRows<1>(q + i * d, d, kt, s + i * kB); break;
    default: break;
  }
}

// Scores of R query rows against keys j0..j0+3: each key vector loaded
// once for all rows; 4R accumulators.
template <int R>
inline void RowScores4(const float* q, int64_t d, const float* k, float* s) {
  __m256 acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < 4; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  int64_t c = 0;
  for (; c + 8 <= d; c += 8) {
    __m256 kv[4];
    for (int t = 0; t < 4; ++t) kv[t] = _mm256_loadu_ps(k + t * d + c);
    for (int r = 0; r < R; ++r) {
      const __m256 qv = _mm256_loadu_ps(q + r * d + c);
      for (int t = 0; t < 4; ++t) acc[r][t] = _mm256_fmadd_ps(qv, kv[t], acc[r][t]);
    }
  }
  if (c < d) {
    const __m256i m = LaneMask(d - c);
    __m256 kv[4];
    for (int t = 0; t < 4; ++t) kv[t] = _mm256_maskload_ps(k + t * d + c, m);
    for (int r = 0; r < R; ++r) {
      const __m256 qv = _mm256_maskload_ps(q + r * d + c, m);
      for (int t = 0; t < 4; ++t) acc[r][t] = _mm256_fmadd_ps(qv, kv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < 4; ++t) s[r * kB + t] = HorizontalSum(acc[r][t]);
  }
}

template <int R>
inline void RowScores(const float* q, int64_t d, const float* k, float* s) {
  for (int64_t j = 0; j < kB; j += 4) RowScores4<R>(q, d, k + j * d, s + j);
}

void ScoresFromRows(const float* q, int64_t mq, int64_t d, const float* k, float* s) {
  for (int64_t i = 0; i < mq; i += 2) {
    if (mq - i >= 2) {
      RowScores<2>(q + i * d, d, k, s + i * kB);
    } else {
      RowScores<1>(q + i * d, d, k, s + i * kB);
    }
  }
}

// e^x for x <= 0 (larger x is not needed: arguments are s - max).
inline __m256 ExpNonPositive(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // f = x - n ln2, with ln2 split in two so n * ln2_hi is exact.
  __m256 f = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  f = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), f);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(_mm256_mul_ps(p, f), f, _mm256_add_ps(f, _mm256_set1_ps(1.0f)));
  // 2^n for n in [-126, 0] (x >= -87): n + 127 in the exponent field.
  const __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// Turns row i's scores into probabilities (zero outside [lo, hi)) and
// returns the factor acc and l must be scaled by; updates m and l.
inline float RowProbabilities(float* si, int32_t lo, int32_t hi, float* m, float* l) {
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  __m256 sv[4], valid[4];
  __m256 vmax = neg_inf;
  for (int u = 0; u < 4; ++u) {
    const __m256i idx = _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm256_set1_epi32(8 * u));
    const __m256i in = _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(lo - 1)),
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32(hi), idx));
    valid[u] = _mm256_castsi256_ps(in);
    sv[u] = _mm256_blendv_ps(neg_inf, _mm256_loadu_ps(si + 8 * u), valid[u]);
    vmax = _mm256_max_ps(vmax, sv[u]);
  }
  const float block_max = HorizontalMax(vmax);
  const float new_max = std::max(*m, block_max);
  const float correction = std::exp(*m - new_max);  // 0 when m = -inf
  const __m256 mx = _mm256_set1_ps(new_max);
  __m256 sum = _mm256_setzero_ps();
  for (int u = 0; u < 4; ++u) {
    const __m256 p = _mm256_and_ps(valid[u], ExpNonPositive(_mm256_sub_ps(sv[u], mx)));
    _mm256_storeu_ps(si + 8 * u, p);
    sum = _mm256_add_ps(sum, p);
  }
  *l = *l * correction + HorizontalSum(sum);
  *m = new_max;
  return correction;
}

// acc rows [R, d] = acc * correction + P V over keys [j0, j1) (P is zero
// outside each row's valid range).
template <int R>
inline void AccumulateRows(const float* p, const float* correction, int64_t j0, int64_t j1,
                           const float* v, int64_t d, float* acc) {
  for (int64_t c = 0; c < d; c += 32) {
    const int64_t width = std::min<int64_t>(32, d - c);
    if (width == 32) {
      __m256 a[R][4];
      for (int r = 0; r < R; ++r) {
        const __m256 corr = _mm256_set1_ps(correction[r]);
        for (int u = 0; u < 4; ++u) {
          a[r][u] = _mm256_mul_ps(_mm256_loadu_ps(acc + r * d + c + 8 * u), corr);
        }
      }
      for (int64_t j = j0; j < j1; ++j) {
        const float* vj = v + j * d + c;
        __m256 vv[4];
        for (int u = 0; u < 4; ++u) vv[u] = _mm256_loadu_ps(vj + 8 * u);
        for (int r = 0; r < R; ++r) {
          const __m256 pr = _mm256_broadcast_ss(p + r * kB + j);
          for (int u = 0; u < 4; ++u) a[r][u] = _mm256_fmadd_ps(pr, vv[u], a[r][u]);
        }
      }
      for (int r = 0; r < R; ++r) {
        for (int u = 0; u < 4; ++u) _mm256_storeu_ps(acc + r * d + c + 8 * u, a[r][u]);
      }
      continue;
    }
    __m256i mask[4];
    for (int u = 0; u < 4; ++u) mask[u] = LaneMask(width - 8 * u);
    __m256 a[R][4];
    for (int r = 0; r < R; ++r) {
      const __m256 corr = _mm256_set1_ps(correction[r]);
      for (int u = 0; u < 4; ++u) {
        a[r][u] = _mm256_mul_ps(_mm256_maskload_ps(acc + r * d + c + 8 * u, mask[u]), corr);
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      const float* vj = v + j * d + c;
      __m256 vv[4];
      for (int u = 0; u < 4; ++u) vv[u] = _mm256_maskload_ps(vj + 8 * u, mask[u]);
      for (int r = 0; r < R; ++r) {
        const __m256 pr = _mm256_broadcast_ss(p + r * kB + j);
        for (int u = 0; u < 4; ++u) a[r][u] = _mm256_fmadd_ps(pr, vv[u], a[r][u]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int u = 0; u < 4; ++u) _mm256_maskstore_ps(acc + r * d + c + 8 * u, mask[u], a[r][u]);
    }
  }
}

void SoftmaxAccumulate(float* s, int64_t mq, const int32_t* lo, const int32_t* hi,
                       const float* v, int64_t d, float* m, float* l, float* acc) {
  int64_t i = 0;
  while (i < mq) {
    if (lo[i] >= hi[i]) {
      ++i;
      continue;
    }
    // Pair row i with the next row when it has keys too.
    const bool pair = i + 1 < mq && lo[i + 1] < hi[i + 1];
    float correction[2];
    correction[0] = RowProbabilities(s + i * kB, lo[i], hi[i], m + i, l + i);
    int64_t j0 = lo[i], j1 = hi[i];
    if (pair) {
      correction[1] = RowProbabilities(s + (i + 1) * kB, lo[i + 1], hi[i + 1], m + i + 1, l + i + 1);
      j0 = std::min<int64_t>(j0, lo[i + 1]);
      j1 = std::max<int64_t>(j1, hi[i + 1]);
      AccumulateRows<2>(s + i * kB, correction, j0, j1, v, d, acc + i * d);
      i += 2;
    } else {
      AccumulateRows<1>(s + i * kB, correction, j0, j1, v, d, acc + i * d);
      i += 1;
    }
  }
}

// r[i] lane c -> r[c] lane i for 8 vectors of 8.
inline void Transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// 8x8 blocks transposed in registers; the d % 8 tail column by column.
void TransposeKeys(const float* k, int64_t d, float* kt) {
  int64_t c = 0;
  for (; c + 8 <= d; c += 8) {
    for (int64_t j0 = 0; j0 < kB; j0 += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(k + (j0 + i) * d + c);
      Transpose8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(kt + (c + i) * kB + j0, r[i]);
    }
  }
  for (; c < d; ++c) {
    for (int64_t j = 0; j < kB; ++j) kt[c * kB + j] = k[j * d + c];
  }
}

void WidenBf16(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)));
  }
  for (; i < n; ++i) {
    const uint32_t bits = uint32_t{src[i]} << 16;
    std::memcpy(dst + i, &bits, sizeof(bits));
  }
}

}  // namespace

const AttentionKernels& Avx2AttentionKernels() {
  static const AttentionKernels kernels{Scores, ScoresFromRows, SoftmaxAccumulate, TransposeKeys,
                                        WidenBf16};
  return kernels;
}

}  // namespace tessera::cpu

#pragma GCC pop_options

#endif  // defined(__x86_64__) && defined(__GNUC__)
