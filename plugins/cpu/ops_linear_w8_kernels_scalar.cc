// The portable (scalar) kernels of linear v2 (ops_linear_w8_kernels.h):
// built for the baseline ISA, no intrinsics. The block dequantises one
// weight row at a time into a per-thread f32 scratch and takes 8-lane
// partial sums against every x row (loops GCC may map onto the baseline's
// vectors). Any group size. Also LinearW8KernelsFor, the per-path table.
#include <algorithm>
#include <vector>

#include "ops_linear_w8_kernels.h"

namespace tessera::cpu {
namespace {

constexpr int kLanes = 8;

void DequantScalar(const int8_t* w, int64_t ldw, const float* s, int64_t lds, int64_t n,
                   int64_t k, int64_t group, float* dst) {
  for (int64_t j = 0; j < n; ++j) {
    const int8_t* wr = w + j * ldw;
    const float* sr = s + j * lds;
    float* d = dst + j * k;
    for (int64_t g0 = 0, gi = 0; g0 < k; g0 += group, ++gi) {
      const float scale = sr[gi];
      const int64_t g1 = std::min(k, g0 + group);
      for (int64_t i = g0; i < g1; ++i) d[i] = static_cast<float>(wr[i]) * scale;
    }
  }
}

void BlockScalar(const float* x, int64_t ldx, int64_t rows, const int8_t* w, int64_t ldw,
                 const float* s, int64_t lds, int64_t n, int64_t k, int64_t group, float* out,
                 int64_t ldo) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(k)) scratch.resize(static_cast<size_t>(k));
  float* wf = scratch.data();
  const int64_t k8 = k - k % kLanes;
  for (int64_t j = 0; j < n; ++j) {
    DequantScalar(w + j * ldw, ldw, s + j * lds, lds, 1, k, group, wf);
    for (int64_t m = 0; m < rows; ++m) {
      const float* xr = x + m * ldx;
      float acc[kLanes] = {};
      for (int64_t i = 0; i < k8; i += kLanes) {
        for (int l = 0; l < kLanes; ++l) acc[l] += xr[i + l] * wf[i + l];
      }
      float t = 0.0f;
      for (int l = 0; l < kLanes; ++l) t += acc[l];
      for (int64_t i = k8; i < k; ++i) t += xr[i] * wf[i];
      out[m * ldo + j] = t;
    }
  }
}

}  // namespace

const LinearW8Kernels& ScalarLinearW8Kernels() {
  static const LinearW8Kernels kernels{&BlockScalar, 1, &DequantScalar};
  return kernels;
}

const LinearW8Kernels& LinearW8KernelsFor(CpuIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (isa) {
    case CpuIsa::kAvx2:
      return Avx2LinearW8Kernels();
    case CpuIsa::kAvx512:
    case CpuIsa::kAvx512Bf16:  // no bf16 instruction helps int8 weights
      return Avx512LinearW8Kernels();
    default:
      break;
  }
#else
  (void)isa;
#endif
  return ScalarLinearW8Kernels();
}

}  // namespace tessera::cpu
