// The AVX-512 (F/BW/VL) linear block kernels (ops_linear_kernels.h).
//  - Decode blocks (rows < kGemmMinRows): 4x4 register tiles of 16-lane
//    f32 accumulators (16 of the 32 zmm registers); bf16 weights are
//    widened in registers (zero-extend, shift left 16), f16 weights with
//    vcvtph2ps, so weights stream straight from memory. The K tail
//    (K % 16) is one masked step: nothing past a row is read.
//  - Prefill blocks: the packed-panel f32 GEMM (ops_linear_gemm_f32_body.h)
//    with 6x4 micro-tiles (6 rows x 64 columns: 24 zmm accumulators, 4
//    panel loads and 6 broadcasts per 24 FMAs) over panels of 128 inputs
//    (32 KiB), weights widened once per panel.
// Compiled for avx512 by a target pragma: only called when cpuid reports
// it. The avx512bf16 path uses these for every pair but bf16 x bf16.
#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ops_linear_kernels.h"

// GCC 12 warns falsely inside _mm512_reduce_add_ps (an undefined vector).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

#include "avx512_sum4.h"
#include "avx512_transpose16.h"

namespace tessera::cpu {
namespace {

inline __mmask16 FirstLanes(int64_t count) {
  return count >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << count) - 1u);
}

// Weight types: Load (16 elements as f32), LoadMasked, and LoadPart (the
// GEMM's: count in [1, 16], zero past it).
struct F32W {
  using T = float;
  static __m512 Load(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 LoadMasked(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static __m512 LoadPart(const float* p, int64_t count) { return LoadMasked(p, FirstLanes(count)); }
};
inline __m512 WidenBf16(__m256i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}
struct Bf16W {
  using T = uint16_t;
  static __m512 Load(const uint16_t* p) {
    return WidenBf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 LoadMasked(const uint16_t* p, __mmask16 m) {
    return WidenBf16(_mm256_maskz_loadu_epi16(m, p));
  }
  static __m512 LoadPart(const uint16_t* p, int64_t count) {
    return LoadMasked(p, FirstLanes(count));
  }
};
struct F16W {
  using T = uint16_t;
  static __m512 Load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 LoadMasked(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
  static __m512 LoadPart(const uint16_t* p, int64_t count) {
    return LoadMasked(p, FirstLanes(count));
  }
};

// ---- Prefill: the packed-panel f32 GEMM ----------------------------------

struct GemmVec {
  using V = __m512;
  static constexpr int kLanes = 16;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_load_ps(p); }
  static void Store(float* p, V v) { _mm512_store_ps(p, v); }
  static V Set1(float f) { return _mm512_set1_ps(f); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static void Transpose(V r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; ++i) t[i] = _mm512_castps_si512(r[i]);
    Transpose16(t);
    for (int i = 0; i < 16; ++i) r[i] = _mm512_castsi512_ps(t[i]);
  }
  static void Accumulate(float* o, V s, int64_t cols, bool first) {
    const __mmask16 m = FirstLanes(cols);
    if (!first) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, o));
    _mm512_mask_storeu_ps(o, m, s);
  }
};

constexpr int64_t kGemmMinRows = 32;  // below this the panel packing does not pay
constexpr int kGemmMr = 6;
constexpr int kGemmNv = 4;
constexpr int64_t kGemmKc = 128;

#include "ops_linear_gemm_f32_body.h"

// out[r * ldo + j] = dot(x_r, w_j) over k for r < MR, j < nr (w has 4
// valid pointers; the padded ones repeat a real row).
template <int MR, typename W>
inline __attribute__((always_inline)) void Tile(const float* x, int64_t ldx,
                                                const typename W::T* const* w, int64_t k, int nr,
                                                float* out, int64_t ldo,
                                                const typename W::T* const* pf) {
  __m512 acc[MR][4];
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
  }
  const int64_t k16 = k & ~int64_t{15};
  for (int64_t i = 0; i < k16; i += 16) {
    __m512 xv[MR];
    for (int r = 0; r < MR; ++r) xv[r] = _mm512_loadu_ps(x + r * ldx + i);
    for (int j = 0; j < 4; ++j) {
      const __m512 wv = W::Load(w[j] + i);
      _mm_prefetch(reinterpret_cast<const char*>(pf[j] + i), _MM_HINT_T1);
      for (int r = 0; r < MR; ++r) acc[r][j] = _mm512_fmadd_ps(xv[r], wv, acc[r][j]);
    }
  }
  if (k16 < k) {
    const __mmask16 mask = static_cast<__mmask16>((1u << (k - k16)) - 1u);
    __m512 xv[MR];
    for (int r = 0; r < MR; ++r) xv[r] = _mm512_maskz_loadu_ps(mask, x + r * ldx + k16);
    for (int j = 0; j < 4; ++j) {
      const __m512 wv = W::LoadMasked(w[j] + k16, mask);
      for (int r = 0; r < MR; ++r) acc[r][j] = _mm512_fmadd_ps(xv[r], wv, acc[r][j]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    const __m128 s = Sum4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    if (nr == 4) {
      _mm_storeu_ps(out + r * ldo, s);
    } else {
      alignas(16) float t[4];
      _mm_store_ps(t, s);
      for (int j = 0; j < nr; ++j) out[r * ldo + j] = t[j];
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
    for (; m + 4 <= rows; m += 4)
      Tile<4, W>(x + m * ldx, ldx, wr, k, nr, out + m * ldo + j0, ldo, m == 0 ? pf : wr);
    switch (rows - m) {
      case 3:
        Tile<3, W>(x + m * ldx, ldx, wr, k, nr, out + m * ldo + j0, ldo, m == 0 ? pf : wr);
        break;
      case 2:
        Tile<2, W>(x + m * ldx, ldx, wr, k, nr, out + m * ldo + j0, ldo, m == 0 ? pf : wr);
        break;
      case 1:
        Tile<1, W>(x + m * ldx, ldx, wr, k, nr, out + m * ldo + j0, ldo, m == 0 ? pf : wr);
        break;
      default:
        break;
    }
  }
}

}  // namespace
}  // namespace tessera::cpu

#pragma GCC pop_options
#pragma GCC diagnostic pop

// The table is built by baseline code (the pragma above covers only the
// kernels themselves).
namespace tessera::cpu {

const LinearKernels& Avx512LinearKernels() {
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
