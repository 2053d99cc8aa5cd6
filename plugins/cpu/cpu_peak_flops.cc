// Peak loops of cpu_peak_flops.h. Each keeps independent accumulator
// chains in registers (12 of the 16 xmm/ymm, 16 of the 32 zmm: enough to
// cover a 4-6 cycle latency on two pipes, and no spills) and never touches
// memory inside the loop; the result is summed afterwards so the compiler
// cannot drop it.
#include "cpu_peak_flops.h"

#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tessera::cpu {
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

double MeasurePeakGflops(CpuIsa isa, ThreadPool& pool, double seconds) {
  if (!CpuSupports(isa)) return 0;
  double (*loop)(int64_t) = LoopScalar;
  if (isa == CpuIsa::kAvx2) loop = LoopAvx2;
  if (isa == CpuIsa::kAvx512) loop = LoopAvx512;
  if (isa == CpuIsa::kAvx512Bf16) loop = LoopAvx512Bf16;
  // Calibrate on one thread, then run every thread for ~`seconds`.
  int64_t iters = 1 << 16;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    loop(iters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > seconds / 8 || iters > (int64_t{1} << 34)) {
      iters = static_cast<int64_t>(static_cast<double>(iters) * seconds / s);
      break;
    }
    iters *= 4;
  }
  std::atomic<double> flops{0};
  const auto t0 = std::chrono::steady_clock::now();
  pool.ParallelFor(pool.size(), 1, [&](int64_t begin, int64_t end) {
    double f = 0;
    for (int64_t i = begin; i < end; ++i) f += loop(iters);
    flops.fetch_add(f);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return flops.load() / s * 1e-9;
}

}  // namespace tessera::cpu
