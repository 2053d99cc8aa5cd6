// Sum4: four horizontal sums of AVX-512 f32 vectors at once, shared by the
// AVX-512 kernel files (linear, attention). Include it after the file's
// `#pragma GCC target` (it needs avx512f): the function is `static`, so
// each kernel file compiles its own copy for its own target and no copy
// built for one ISA can stand in for another at link time.
#ifndef TESSERA_PLUGINS_CPU_AVX512_SUM4_H_
#define TESSERA_PLUGINS_CPU_AVX512_SUM4_H_

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

namespace tessera::cpu {

// {sum(a), sum(b), sum(c), sum(d)} (about a third of the shuffles of four
// _mm512_reduce_add_ps).
static inline __m128 Sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 abcd = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 h =
      _mm256_add_ps(_mm512_castps512_ps256(abcd),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(abcd), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

}  // namespace tessera::cpu

#endif  // x86-64

#endif  // TESSERA_PLUGINS_CPU_AVX512_SUM4_H_
