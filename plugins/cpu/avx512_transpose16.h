// Transpose16: a 16x16 transpose of 32-bit elements in AVX-512 registers,
// shared by the AVX-512 kernel files that pack weight panels (the bf16 pair
// GEMM of the avx512bf16 path, the f32 GEMM of the avx512 path). Include it
// after the file's `#pragma GCC target` (it needs avx512f): the function is
// `static`, so each kernel file compiles its own copy for its own target and
// no copy built for one ISA can stand in for another at link time.
#ifndef TESSERA_PLUGINS_CPU_AVX512_TRANSPOSE16_H_
#define TESSERA_PLUGINS_CPU_AVX512_TRANSPOSE16_H_

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

namespace tessera::cpu {

// r[i] lane c -> r[c] lane i, for i, c < 16.
static inline void Transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // u[4 * g + e] holds, per 128-bit lane L, element 4L + e of rows 4g..4g+3.
  __m512i u[16];
  for (int g = 0; g < 4; ++g) {
    const __m512i* q = t + 4 * g;
    u[4 * g + 0] = _mm512_unpacklo_epi64(q[0], q[2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(q[0], q[2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(q[1], q[3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(q[1], q[3]);
  }
  for (int e = 0; e < 4; ++e) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x88);
    const __m512i v1 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xdd);
    const __m512i w0 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x88);
    const __m512i w1 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xdd);
    r[e] = _mm512_shuffle_i32x4(v0, w0, 0x88);
    r[8 + e] = _mm512_shuffle_i32x4(v0, w0, 0xdd);
    r[4 + e] = _mm512_shuffle_i32x4(v1, w1, 0x88);
    r[12 + e] = _mm512_shuffle_i32x4(v1, w1, 0xdd);
  }
}

}  // namespace tessera::cpu

#endif  // x86-64

#endif  // TESSERA_PLUGINS_CPU_AVX512_TRANSPOSE16_H_
