// The portable (scalar) linear block kernels: built for the baseline ISA
// of the build. Weight rows of a group of 4 are converted to f32 once into
// a per-thread scratch, then 2x4 tiles accumulate 8 partial sums per dot
// product (loops GCC may map onto the baseline's vectors). On x86-64, whose
// baseline includes SSE2, prefill blocks (>= kGemmMinRows rows) take the
// packed-panel f32 GEMM (ops_linear_gemm_f32_body.h) on 4-lane SSE2
// vectors: 6x2 micro-tiles (6 rows x 8 columns, 12 xmm accumulators),
// multiply then add (the baseline has no FMA), weights widened to f32 by
// scalar code once per panel.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kit_names.h"
#include "ops_linear_kernels.h"

#if defined(__SSE2__)
#include <immintrin.h>
#define TSR_SCALAR_HAS_SSE2_GEMM 1
#endif

namespace tessera::cpu {
namespace {

#if defined(TSR_SCALAR_HAS_SSE2_GEMM)
// p[0, count) widened by W::Get into 4 zero-padded lanes (count in [1, 4]).
template <typename W>
__m128 LoadPartVia(const typename W::T* p, int64_t count) {
  alignas(16) float v[4] = {};
  for (int64_t i = 0; i < count; ++i) v[i] = W::Get(p[i]);
  return _mm_load_ps(v);
}
#define TSR_LOAD_PART(W)                                          \
  static __m128 LoadPart(const T* p, int64_t count) {             \
    return count >= 4 && sizeof(T) == 4                           \
               ? _mm_loadu_ps(reinterpret_cast<const float*>(p))  \
               : LoadPartVia<W>(p, count);                        \
  }
#else
#define TSR_LOAD_PART(W)
#endif

struct F32W {
  using T = float;
  static float Get(float v) { return v; }
  TSR_LOAD_PART(F32W)
};
struct Bf16W {
  using T = uint16_t;
  static float Get(uint16_t v) { return Bf16ToF32(v); }
  TSR_LOAD_PART(Bf16W)
};
struct F16W {
  using T = uint16_t;
  static float Get(uint16_t v) { return F16ToF32(v); }
  TSR_LOAD_PART(F16W)
};
#undef TSR_LOAD_PART

#if defined(TSR_SCALAR_HAS_SSE2_GEMM)
struct GemmVec {
  using V = __m128;
  static constexpr int kLanes = 4;
  static V Zero() { return _mm_setzero_ps(); }
  static V Load(const float* p) { return _mm_load_ps(p); }
  static void Store(float* p, V v) { _mm_store_ps(p, v); }
  static V Set1(float f) { return _mm_set1_ps(f); }
  static V Fma(V a, V b, V c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static void Transpose(V r[4]) { _MM_TRANSPOSE4_PS(r[0], r[1], r[2], r[3]); }
  static void Accumulate(float* o, V s, int64_t cols, bool first) {
    if (cols == 4) {
      _mm_storeu_ps(o, first ? s : _mm_add_ps(s, _mm_loadu_ps(o)));
      return;
    }
    alignas(16) float t[4];
    _mm_store_ps(t, s);
    for (int64_t c = 0; c < cols; ++c) o[c] = first ? t[c] : o[c] + t[c];
  }
};

constexpr int64_t kGemmMinRows = 32;  // below this the panel packing does not pay
constexpr int kGemmMr = 6;
constexpr int kGemmNv = 2;
constexpr int64_t kGemmKc = 128;

#include "ops_linear_gemm_f32_body.h"
#endif

constexpr int kLanes = 8;

// s[r][j] = dot(x_r, w_j) over k, r < MR (1 or 2), j < 4.
template <int MR>
void Tile(const float* const* x, const float* const* w, int64_t k, float s[][4]) {
  float acc[MR][4][kLanes] = {};
  const int64_t k8 = k - k % kLanes;
  for (int64_t i = 0; i < k8; i += kLanes) {
    for (int r = 0; r < MR; ++r) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < kLanes; ++l) acc[r][j][l] += x[r][i + l] * w[j][i + l];
      }
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < 4; ++j) {
      float t = 0.0f;
      for (int l = 0; l < kLanes; ++l) t += acc[r][j][l];
      for (int64_t i = k8; i < k; ++i) t += x[r][i] * w[j][i];
      s[r][j] = t;
    }
  }
}

template <typename W>
void Block(const float* x, int64_t ldx, int64_t rows, const typename W::T* w, int64_t ldw,
           int64_t n, int64_t k, float* out, int64_t ldo) {
#if defined(TSR_SCALAR_HAS_SSE2_GEMM)
  if (rows >= kGemmMinRows && k > 0) {
    GemmF32<W>(x, ldx, rows, w, ldw, n, k, out, ldo);
    return;
  }
#endif
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(4 * k)) scratch.resize(static_cast<size_t>(4 * k));
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    const int nr = static_cast<int>(std::min<int64_t>(4, n - j0));
    const float* wr[4];
    for (int j = 0; j < 4; ++j) {
      const int jj = std::min(j, nr - 1);  // pad the group with its last row
      const typename W::T* src = w + (j0 + jj) * ldw;
      if constexpr (std::is_same_v<typename W::T, float>) {
        wr[j] = src;
      } else {
        float* dst = scratch.data() + jj * k;
        if (j == jj) {
          for (int64_t i = 0; i < k; ++i) dst[i] = W::Get(src[i]);
        }
        wr[j] = dst;
      }
    }
    for (int64_t m = 0; m < rows; m += 2) {
      float s[2][4];
      const float* xr[2] = {x + m * ldx, x + (m + 1) * ldx};
      const int mr = rows - m >= 2 ? 2 : 1;
      if (mr == 2) {
        Tile<2>(xr, wr, k, s);
      } else {
        Tile<1>(xr, wr, k, s);
      }
      for (int r = 0; r < mr; ++r) {
        for (int j = 0; j < nr; ++j) out[(m + r) * ldo + j0 + j] = s[r][j];
      }
    }
  }
}

}  // namespace

const LinearKernels& ScalarLinearKernels() {
  static const LinearKernels kernels = [] {
    LinearKernels t;
    t.f32_f32 = &Block<F32W>;
    t.f32_bf16 = &Block<Bf16W>;
    t.f32_f16 = &Block<F16W>;
    return t;
  }();
  return kernels;
}

const LinearKernels& LinearKernelsFor(CpuIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (isa) {
    case CpuIsa::kAvx2:
      return Avx2LinearKernels();
    case CpuIsa::kAvx512:
      return Avx512LinearKernels();
    case CpuIsa::kAvx512Bf16:
      return Avx512Bf16LinearKernels();
    default:
      break;
  }
#else
  (void)isa;
#endif
  return ScalarLinearKernels();
}

}  // namespace tessera::cpu
