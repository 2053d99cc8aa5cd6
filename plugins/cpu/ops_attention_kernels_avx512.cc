// The AVX-512 (F) paged-attention block kernels (ops_attention_kernels.h).
// scores: 8 (then 4) query rows x 32 keys of accumulators (16 zmm), one
// broadcast of q per row and two loads of Kt per step over d.
// softmax_accumulate: the block's probabilities with a vector exp (range
// reduction to 2^n * e^f, degree-6 polynomial for e^f, vscalefps for the
// 2^n; ~2 ulp), then acc += P V for four (else two) rows at a time over
// 64-column slices of d (16 zmm accumulators, each V load feeding four
// FMAs). Compiled for avx512 by a target pragma: only
// called when cpuid reports it.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "ops_attention_kernels.h"

// GCC 12 warns falsely inside _mm512_reduce_*_ps and the unpacks of Sum4
// (an undefined vector).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma")

#include "avx512_sum4.h"

namespace tessera::cpu {
namespace {

constexpr int64_t kB = kAttentionKeyBlock;
static_assert(kB == 32, "the kernels hold a block's scores in two zmm registers");

template <int R>
inline void ScoreRows(const float* q, int64_t d, const float* kt, float* s) {
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t c = 0; c < d; ++c) {
    const __m512 k0 = _mm512_loadu_ps(kt + c * kB), k1 = _mm512_loadu_ps(kt + c * kB + 16);
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(q[r * d + c]);
      acc[r][0] = _mm512_fmadd_ps(a, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, k1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(s + r * kB, acc[r][0]);
    _mm512_storeu_ps(s + r * kB + 16, acc[r][1]);
  }
}

void Scores(const float* q, int64_t mq, int64_t d, const float* kt, float* s) {
  int64_t i = 0;
  for (; i + 8 <= mq; i += 8) ScoreRows<8>(q + i * d, d, kt, s + i * kB);
  for (; i + 4 <= mq; i += 4) ScoreRows<4>(q + i * d, d, kt, s + i * kB);
  switch (mq - i) {
    case 3: ScoreRows<3>(q + i * d, d, kt, s + i * kB); break;
    case 2: ScoreRows<2>(q + i * d, d, kt, s + i * kB); break;
    case 1: ScoreRows<1>(q + i * d, d, kt, s + i * kB); break;
    default: break;
  }
}

// Scores of R query rows against keys j0..j0+3: each key vector loaded
// once for all rows; 4R accumulators.
template <int R>
inline void RowScores4(const float* q, int64_t d, const float* k, float* s) {
  __m512 acc[R][4];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < 4; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < d; c += 16) {
    const __mmask16 m = d - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (d - c)) - 1);
    __m512 kv[4];
    for (int t = 0; t < 4; ++t) kv[t] = _mm512_maskz_loadu_ps(m, k + t * d + c);
    for (int r = 0; r < R; ++r) {
      const __m512 qv = _mm512_maskz_loadu_ps(m, q + r * d + c);
      for (int t = 0; t < 4; ++t) acc[r][t] = _mm512_fmadd_ps(qv, kv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    _mm_storeu_ps(s + r * kB, Sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]));
  }
}

template <int R>
inline void RowScores(const float* q, int64_t d, const float* k, float* s) {
  for (int64_t j = 0; j < kB; j += 4) RowScores4<R>(q, d, k + j * d, s + j);
}

void ScoresFromRows(const float* q, int64_t mq, int64_t d, const float* k, float* s) {
  for (int64_t i = 0; i < mq; i += 4) {
    switch (std::min<int64_t>(4, mq - i)) {
      case 4: RowScores<4>(q + i * d, d, k, s + i * kB); break;
      case 3: RowScores<3>(q + i * d, d, k, s + i * kB); break;
      case 2: RowScores<2>(q + i * d, d, k, s + i * kB); break;
      default: RowScores<1>(q + i * d, d, k, s + i * kB); break;
    }
  }
}

// e^x for x <= 0 (larger x is not needed: arguments are s - max).
inline __m512 ExpNonPositive(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // f = x - n ln2, with ln2 split in two so n * ln2_hi is exact.
  __m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  f = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), f);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(p, f), f, _mm512_add_ps(f, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// Turns row i's scores into probabilities (zero outside [lo, hi)) and
// returns the factor acc and l must be scaled by; updates m and l.
inline float RowProbabilities(float* si, int32_t lo, int32_t hi, float* m, float* l) {
  const uint64_t bits = ((uint64_t{1} << hi) - 1) & ~((uint64_t{1} << lo) - 1);
  const __mmask16 v0 = static_cast<__mmask16>(bits), v1 = static_cast<__mmask16>(bits >> 16);
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  const __m512 s0 = _mm512_mask_loadu_ps(neg_inf, v0, si);
  const __m512 s1 = _mm512_mask_loadu_ps(neg_inf, v1, si + 16);
  const float block_max = _mm512_reduce_max_ps(_mm512_max_ps(s0, s1));
  const float new_max = std::max(*m, block_max);
  const float correction = std::exp(*m - new_max);  // 0 when m = -inf
  const __m512 mx = _mm512_set1_ps(new_max);
  const __m512 p0 = _mm512_maskz_mov_ps(v0, ExpNonPositive(_mm512_sub_ps(s0, mx)));
  const __m512 p1 = _mm512_maskz_mov_ps(v1, ExpNonPositive(_mm512_sub_ps(s1, mx)));
  _mm512_storeu_ps(si, p0);
  _mm512_storeu_ps(si + 16, p1);
  *l = *l * correction + _mm512_reduce_add_ps(_mm512_add_ps(p0, p1));
  *m = new_max;
  return correction;
}

// acc rows [R, d] = acc * correction + P V over keys [j0, j1) (P is zero
// outside each row's valid range).
template <int R>
inline void AccumulateRows(const float* p, const float* correction, int64_t j0, int64_t j1,
                           const float* v, int64_t d, float* acc) {
  for (int64_t c = 0; c < d; c += 64) {
    const int64_t width = std::min<int64_t>(64, d - c);
    __mmask16 mask[4];
    for (int u = 0; u < 4; ++u) {
      const int64_t lanes = std::clamp<int64_t>(width - 16 * u, 0, 16);
      mask[u] = static_cast<__mmask16>((1u << lanes) - 1);
    }
    __m512 a[R][4];
    for (int r = 0; r < R; ++r) {
      const __m512 corr = _mm512_set1_ps(correction[r]);
      for (int u = 0; u < 4; ++u) {
        a[r][u] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask[u], acc + r * d + c + 16 * u), corr);
      }
    }
    for (int64_t j = j0; j < j1; ++j) {
      const float* vj = v + j * d + c;
      __m512 vv[4];
      for (int u = 0; u < 4; ++u) vv[u] = _mm512_maskz_loadu_ps(mask[u], vj + 16 * u);
      for (int r = 0; r < R; ++r) {
        const __m512 pr = _mm512_set1_ps(p[r * kB + j]);
        for (int u = 0; u < 4; ++u) a[r][u] = _mm512_fmadd_ps(pr, vv[u], a[r][u]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int u = 0; u < 4; ++u) _mm512_mask_storeu_ps(acc + r * d + c + 16 * u, mask[u], a[r][u]);
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
    // Four rows at once when the next three have keys too, else a pair
    // when the next one has.
    const bool quad = i + 3 < mq && lo[i + 1] < hi[i + 1] && lo[i + 2] < hi[i + 2] &&
                      lo[i + 3] < hi[i + 3];
    const bool pair = i + 1 < mq && lo[i + 1] < hi[i + 1];
    float correction[4];
    correction[0] = RowProbabilities(s + i * kB, lo[i], hi[i], m + i, l + i);
    int64_t j0 = lo[i], j1 = hi[i];
    if (quad) {
      for (int r = 1; r < 4; ++r) {
        correction[r] = RowProbabilities(s + (i + r) * kB, lo[i + r], hi[i + r], m + i + r, l + i + r);
        j0 = std::min<int64_t>(j0, lo[i + r]);
        j1 = std::max<int64_t>(j1, hi[i + r]);
      }
      AccumulateRows<4>(s + i * kB, correction, j0, j1, v, d, acc + i * d);
      i += 4;
    } else if (pair) {
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

// Two 16-lane gathers per column c (key rows are d floats apart).
void TransposeKeys(const float* k, int64_t d, float* kt) {
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i idx0 = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(static_cast<int32_t>(d)));
  const __m512i idx1 = _mm512_add_epi32(idx0, _mm512_set1_epi32(static_cast<int32_t>(16 * d)));
  for (int64_t c = 0; c < d; ++c) {
    _mm512_storeu_ps(kt + c * kB, _mm512_i32gather_ps(idx0, k + c, 4));
    _mm512_storeu_ps(kt + c * kB + 16, _mm512_i32gather_ps(idx1, k + c, 4));
  }
}

void WidenBf16(const uint16_t* src, int64_t n, float* dst) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m256i h = _mm256_maskz_loadu_epi16(m, src + i);
    _mm512_mask_storeu_ps(dst + i, m,
                          _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
}

}  // namespace

const AttentionKernels& Avx512AttentionKernels() {
  static const AttentionKernels kernels{Scores, ScoresFromRows, SoftmaxAccumulate, TransposeKeys,
                                        WidenBf16};
  return kernels;
}

}  // namespace tessera::cpu

#pragma GCC pop_options
#pragma GCC diagnostic pop

#endif  // defined(__x86_64__) && defined(__GNUC__)
