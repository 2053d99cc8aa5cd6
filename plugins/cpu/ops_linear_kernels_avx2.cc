// The AVX2 (+FMA, F16C) linear block kernels (ops_linear_kernels.h).
//  - Decode blocks (rows < kGemmMinRows): 2x4 register tiles of 8-lane f32
//    accumulators (8 of the 16 ymm registers); bf16 weights are widened in
//    registers (zero-extend, shift left 16), f16 weights with vcvtph2ps,
//    so weights stream straight from memory. K tails (K % 8) run scalar.
//  - Prefill blocks: the packed-panel f32 GEMM (ops_linear_gemm_f32_body.h)
//    with 6x2 micro-tiles (6 rows x 16 columns: 12 ymm accumulators, 2
//    panel loads and 6 broadcasts per 12 FMAs) over panels of 128 inputs
//    x 64 columns (32 KiB), weights widened once per panel.
// Compiled for avx2 by a target pragma: only called when cpuid reports
// AVX2, FMA and F16C.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kit_names.h"
#include "ops_linear_kernels.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu {
namespace {

// p[0, count) copied into 8 zero-padded elements (count in [1, 8]), so a
// partial vector is loaded without reading past the row.
template <typename T>
struct Padded8 {
  T v[8] = {};
  Padded8(const T* p, int64_t count) { std::memcpy(v, p, static_cast<size_t>(count) * sizeof(T)); }
};

// Weight types: Load (8 elements as f32), Get (one), and LoadPart (the
// GEMM's: count in [1, 8], zero past it).
struct F32W {
  using T = float;
  static __m256 Load(const float* p) { return _mm256_loadu_ps(p); }
  static float Get(float v) { return v; }
  static __m256 LoadPart(const float* p, int64_t count) {
    return count >= 8 ? Load(p) : Load(Padded8<float>(p, count).v);
  }
};
struct Bf16W {
  using T = uint16_t;
  static __m256 Load(const uint16_t* p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static float Get(uint16_t v) { return Bf16ToF32(v); }
  static __m256 LoadPart(const uint16_t* p, int64_t count) {
    return count >= 8 ? Load(p) : Load(Padded8<uint16_t>(p, count).v);
  }
};
struct F16W {
  using T = uint16_t;
  static __m256 Load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float Get(uint16_t v) { return F16ToF32(v); }
  static __m256 LoadPart(const uint16_t* p, int64_t count) {
    return count >= 8 ? Load(p) : Load(Padded8<uint16_t>(p, count).v);
  }
};

// ---- Prefill: the packed-panel f32 GEMM ----------------------------------

struct GemmVec {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const float* p) { return _mm256_load_ps(p); }
  static void Store(float* p, V v) { _mm256_store_ps(p, v); }
  static V Set1(float f) { return _mm256_set1_ps(f); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static void Transpose(V r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    // u[4h + e]: per 128-bit lane, element e of rows 4h..4h+3 (h = 0, 1).
    for (int h = 0; h < 2; ++h) {
      const __m256* q = t + 4 * h;
      u[4 * h + 0] = _mm256_shuffle_ps(q[0], q[2], _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * h + 1] = _mm256_shuffle_ps(q[0], q[2], _MM_SHUFFLE(3, 2, 3, 2));
      u[4 * h + 2] = _mm256_shuffle_ps(q[1], q[3], _MM_SHUFFLE(1, 0, 1, 0));
      u[4 * h + 3] = _mm256_shuffle_ps(q[1], q[3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int e = 0; e < 4; ++e) {
      r[e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x20);
      r[4 + e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x31);
    }
  }
  static void Accumulate(float* o, V s, int64_t cols, bool first) {
    if (cols == 8) {
      if (!first) s = _mm256_add_ps(s, _mm256_loadu_ps(o));
      _mm256_storeu_ps(o, s);
      return;
    }
    alignas(32) float t[8];
    _mm256_store_ps(t, s);
    for (int64_t j = 0; j < cols; ++j) o[j] = first ? t[j] : o[j] + t[j];
  }
};

constexpr int64_t kGemmMinRows = 32;  // below this the panel packing does not pay
constexpr int kGemmMr = 6;
constexpr int kGemmNv = 2;
constexpr int64_t kGemmKc = 128;

#include "ops_linear_gemm_f32_body.h"

inline float HSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// out[r * ldo + j] = dot(x_r, w_j) over k for r < MR, j < nr (w has 4
// valid pointers; the padded ones repeat a real row).
template <int MR, typename W>
inline __attribute__((always_inline)) void Tile(const float* x, int64_t ldx,
                                                const typename W::T* const* w, int64_t k, int nr,
                                                float* out, int64_t ldo,
                                                const typename W::T* const* pf) {
  __m256 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm256_setzero_ps();
  }
  const int64_t k8 = k & ~int64_t{7};
  for (int64_t i = 0; i < k8; i += 8) {
    __m256 xv[MR];
    for (int r = 0; r < MR; ++r) xv[r] = _mm256_loadu_ps(x + r * ldx + i);
    for (int j = 0; j < 4; ++j) {
      const __m256 wv = W::Load(w[j] + i);
      _mm_prefetch(reinterpret_cast<const char*>(pf[j] + i), _MM_HINT_T1);
      for (int r = 0; r < MR; ++r) acc[r][j] = _mm256_fmadd_ps(xv[r], wv, acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < nr; ++j) {
      float s = HSum(acc[r][j]);
      for (int64_t i = k8; i < k; ++i) s += x[r * ldx + i] * W::Get(w[j][i]);
      out[r * ldo + j] = s;
    }
  }
}

template <typename W>
void Block(const float* x, int64_t ldx, int64_t rows, const typename W::T* w, int64_t ldw,
           int64_t n, int64_t k, float* out, int64_t ldo) {
  if (rows >= kGemmMinRows && k > 0) {
    GemmF32<W>(x, ldx, rows, w, ldw, n, k, out, ldo);
    return;
  }
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const int nr = static_cast<int>(std::min<int64_t>(4, n - j0));
    const typename W::T* wr[4];
    for (int j = 0; j < 4; ++j) wr[j] = w + (j0 + std::min(j, nr - 1)) * ldw;
    // The next group of rows, fetched into L2 while this one is used
    // (memory-bound GEMV needs more requests in flight than the hardware
    // prefetcher starts); the last group re-touches its own rows.
    const typename W::T* pf[4];
    for (int j = 0; j < 4; ++j) pf[j] = j0 + 4 + j < n ? wr[j] + 4 * ldw : wr[j];
    int64_t m = 0;
    for (; m + 2 <= rows; m += 2)
      Tile<2, W>(x + m * ldx, ldx, wr, k, nr, out + m * ldo + j0, ldo, m == 0 ? pf : wr);
    if (m < rows)
      Tile<1, W>(x + m * ldx, ldx, wr, k, nr, out + m * ldo + j0, ldo, m == 0 ? pf : wr);
  }
}

}  // namespace
}  // namespace tessera::cpu

#pragma GCC pop_options

// The table is built by baseline code (the pragma above covers only the
// kernels themselves).
namespace tessera::cpu {

const LinearKernels& Avx2LinearKernels() {
  static const LinearKernels kernels = [] {
    LinearKernels t;
    t.f32_f32 = &Block<F32W>;
    t.f32_bf16 = &Block<Bf16W>;
    t.f32_f16 = &Block<F16W>;
    return t;
  }();
  return kernels;
}

}  // namespace tessera::cpu

#endif  // x86-64
