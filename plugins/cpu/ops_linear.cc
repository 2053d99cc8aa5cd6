// linear: x A (T, K), w W (N, K) row-major with unit innermost stride,
// optional bias A (N) -> y A (T, N); y = x w^T (+ bias).
//
// The driver around the per-ISA block kernels (ops_linear_kernels.h; the
// path is the one InitPlugin chose, cpu_isa.h):
//  - x is made contiguous once per call: kept as bf16 when the path has a
//    bf16 x bf16 kernel (bf16 x and bf16 w) and the call uses it (always
//    for decode-sized calls; for prefill-sized ones only where vdpbf16ps
//    out-runs f32 FMAs on this chip, bf16_gemm_choice.h), else converted
//    to f32.
//    Weights are never converted in memory; kernels widen them in registers.
//  - The row blocks, work items and output rounding are the shared linear
//    driver's (ops_linear_driver.h): for decode every thread streams its
//    own disjoint range of weight rows once; for prefill each group of 4
//    weight rows is loaded once per block and reused from L1 by every row.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "bf16_gemm_choice.h"
#include "cpu_isa.h"
#include "ops.h"
#include "ops_common.h"
#include "ops_linear_driver.h"
#include "ops_linear_kernels.h"

namespace tessera::cpu {
namespace {

// The f32-x kernel for weight type W.
template <typename W>
auto F32KernelFor(const LinearKernels& k) {
  if constexpr (std::is_same_v<W, float>) {
    return k.f32_f32;
  } else if constexpr (std::is_same_v<W, Bf16>) {
    return k.f32_bf16;
  } else {
    return k.f32_f16;
  }
}

// Weight storage as the kernels see it: f32, or the 16-bit pattern.
template <typename W>
using WStore = std::conditional_t<std::is_same_v<W, float>, float, uint16_t>;

template <typename A, typename W, typename XT>
Status LinearWith(const OpCall& call, ExecContext& ctx, LinearBlockFn<XT, WStore<W>> kernel) {
  const TensorView &x = call.in[0], &w = call.in[1], &y = call.out[0];
  const TensorView* bias = call.num_inputs == 3 ? &call.in[2] : nullptr;
  const int64_t t_count = x.dim(0), k = x.dim(1), n = w.dim(0);

  const std::vector<float> bias_f = LinearBiasF32<A>(bias, n);
  std::vector<XT> x_packed;
  int64_t ldx = 0;
  const XT* xp = LinearXAs<A, XT>(x, t_count, k, &x_packed, &ldx, ctx);
  const WStore<W>* wp = reinterpret_cast<const WStore<W>*>(w.data);
  const int64_t ldw = w.stride(0);
  RunLinearItems<A>(ctx, y, bias_f, t_count, n, k, k * static_cast<int64_t>(sizeof(XT)),
                    [&](int64_t row, int64_t rows, int64_t n0, int64_t nb, float* out) {
                      kernel(xp + row * ldx, ldx, rows, wp + n0 * ldw, ldw, nb, k, out,
                             kLinearBlockN);
                    });
  return OkStatus();
}

template <typename A, typename W>
Status LinearImpl(const OpCall& call, ExecContext& ctx) {
  if (call.in[0].dim(0) == 0 || call.in[1].dim(0) == 0) return OkStatus();
  const LinearKernels& kernels = LinearKernelsFor(ActiveCpuIsa());
  if constexpr (std::is_same_v<A, Bf16> && std::is_same_v<W, Bf16>) {
    const bool prefill = call.in[0].dim(0) >= kBf16GemmMinRows;
    if (kernels.bf16_bf16 != nullptr && (!prefill || ActiveBf16Gemm() == Bf16Gemm::kDpbf16)) {
      return LinearWith<A, W, uint16_t>(call, ctx, kernels.bf16_bf16);
    }
  }
  return LinearWith<A, W, float>(call, ctx, F32KernelFor<W>(kernels));
}

}  // namespace
Status RunLinear(const OpCall& call, ExecContext& ctx) {
  const tsr_dtype a = call.in[0].dtype, w = call.in[1].dtype;
  if (a == TSR_DTYPE_F32 && w == TSR_DTYPE_F32) return LinearImpl<float, float>(call, ctx);
  if (a == TSR_DTYPE_F32 && w == TSR_DTYPE_F16) return LinearImpl<float, F16>(call, ctx);
  if (a == TSR_DTYPE_BF16 && w == TSR_DTYPE_BF16) return LinearImpl<Bf16, Bf16>(call, ctx);
  if (a == TSR_DTYPE_BF16 && w == TSR_DTYPE_F16) return LinearImpl<Bf16, F16>(call, ctx);
  return Internal("linear has no kernel for ", DTypeName(a), " x ", DTypeName(w));
}

}  // namespace tessera::cpu
