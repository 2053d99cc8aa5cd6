// Loops of cpu_peak_loops.h.
#include "cpu_peak_loops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace tessera::cpu {
#if defined(__x86_64__) && defined(__GNUC__)
namespace {

// Each returns flops done; `iters` outer iterations of kChains operations.
__attribute__((target("sse2"), noinline)) double LoopScalar(int64_t iters) {
  constexpr int kChains = 12;
  __m128 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm_set1_ps(static_cast<float>(i));
  const __m128 a = _mm_set1_ps(0.999f), b = _mm_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) {
      acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], a), b);
    }
  }
  float sink = 0;
  for (int i = 0; i < kChains; ++i) sink += _mm_cvtss_f32(acc[i]);
  __asm__ volatile("" : : "x"(sink));
  return 8.0 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx2,fma"), noinline)) double LoopAvx2(int64_t iters) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) {
      acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    }
  }
  float sink = 0;
  for (int i = 0; i < kChains; ++i) sink += _mm256_cvtss_f32(acc[i]);
  __asm__ volatile("" : : "x"(sink));
  return 16.0 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx512f"), noinline)) double LoopAvx512(int64_t iters) {
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) {
      acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    }
  }
  float sink = 0;
  for (int i = 0; i < kChains; ++i) sink += _mm512_cvtss_f32(acc[i]);
  __asm__ volatile("" : : "x"(sink));
  return 32.0 * kChains * static_cast<double>(iters);
}

__attribute__((target("avx512f,avx512bf16"), noinline)) double LoopAvx512Bf16(int64_t iters) {
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) {
      acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    }
  }
  float sink = 0;
  for (int i = 0; i < kChains; ++i) sink += _mm512_cvtss_f32(acc[i]);
  __asm__ volatile("" : : "x"(sink));
  return 64.0 * kChains * static_cast<double>(iters);
}

}  // namespace

double RunPeakLoop(CpuIsa isa, int64_t iters) {
  switch (isa) {
    case CpuIsa::kAvx2:
      return LoopAvx2(iters);
    case CpuIsa::kAvx512:
      return LoopAvx512(iters);
    case CpuIsa::kAvx512Bf16:
      return LoopAvx512Bf16(iters);
    case CpuIsa::kScalar:
      break;
  }
  return LoopScalar(iters);
}
#else
double RunPeakLoop(CpuIsa, int64_t) { return 0; }
#endif

}  // namespace tessera::cpu
