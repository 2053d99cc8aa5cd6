// The portable (scalar) linear block kernels: built for the baseline ISA
// of the build, no intrinsics. Weight rows of a group of 4 are converted to
// f32 once into a per-thread scratch, then 2x4 tiles accumulate 8 partial
// sums per dot product (loops GCC may map onto the baseline's vectors).
#include <algorithm>
#include <vector>

#include "kit_names.h"
#include "ops_linear_kernels.h"

namespace tessera::cpu {
namespace {

struct F32W {
  using T = float;
  static float Get(float v) { return v; }
};
struct Bf16W {
  using T = uint16_t;
  static float Get(uint16_t v) { return Bf16ToF32(v); }
};
struct F16W {
  using T = uint16_t;
  static float Get(uint16_t v) { return F16ToF32(v); }
};

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
