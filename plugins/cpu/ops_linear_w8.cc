// linear v2 (weight-only int8, ABI 1.1): x A (T, K), w I8 (N, K) with unit
// innermost stride, w_scale F32 (N, K / G), optional bias A (N)
// -> y A (T, N); y[t, n] = sum_k x[t, k] * w[n, k] * w_scale[n, k / G] (+ bias).
//
// The driver around the per-ISA kernels (ops_linear_w8_kernels.h):
//  - x is made f32 and contiguous once per call (used in place when it
//    already is); w_scale likewise (it is small).
//  - Row blocks, work items and output rounding are linear v1's
//    (ops_linear_driver.h), so for decode every thread streams its own
//    disjoint int8 rows once.
//  - An item with few x rows (decode) runs the int8 block kernel, which
//    widens weights in registers. An item with many rows (prefill)
//    dequantises its kLinearBlockN weight rows once into a per-thread f32
//    panel and runs the f32 x f32 linear kernel on it, so each dequantised
//    panel is reused from cache by every row of the block.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu_isa.h"
#include "ops.h"
#include "ops_common.h"
#include "ops_linear_driver.h"
#include "ops_linear_kernels.h"
#include "ops_linear_w8_kernels.h"

namespace tessera::cpu {
namespace {

constexpr int64_t kPanelRows = 16;          // x rows from which an item dequantises

template <typename A>
Status LinearW8Impl(const OpCall& call, ExecContext& ctx) {
  LinearInt8Call c;
  if (!PrepareLinearInt8<A>(call, &c)) return OkStatus();
  const int64_t k = c.k, group = c.group, ldw = c.ldw, lds = c.lds;

  // x as f32 [T, ldx].
  std::vector<float> x_packed;
  int64_t ldx = 0;
  const float* xp = LinearXAs<A, float>(call.in[0], c.t_count, k, &x_packed, &ldx, ctx);

  const LinearW8Kernels& kernels = LinearW8KernelsFor(ActiveCpuIsa());
  const LinearW8BlockFn block = group == k || group % kernels.group_multiple == 0
                                    ? kernels.block
                                    : ScalarLinearW8Kernels().block;
  const auto panel_kernel = LinearKernelsFor(ActiveCpuIsa()).f32_f32;

  RunLinearItems<A>(ctx, call.out[0], c.bias_f, c.t_count, c.n, k, k * 4,
                    [&](int64_t row, int64_t rows, int64_t n0, int64_t nb, float* out) {
    const float* xr = xp + row * ldx;
    const int8_t* wr = c.w + n0 * ldw;
    const float* sr = c.scales + n0 * lds;
    if (rows >= kPanelRows) {
      thread_local std::vector<float> panel;
      panel.resize(static_cast<size_t>(nb * k));
      kernels.dequant(wr, ldw, sr, lds, nb, k, group, panel.data());
      panel_kernel(xr, ldx, rows, panel.data(), k, nb, k, out, kLinearBlockN);
    } else {
      block(xr, ldx, rows, wr, ldw, sr, lds, nb, k, group, out, kLinearBlockN);
    }
  });
  return OkStatus();
}

}  // namespace

Status RunLinearW8(const OpCall& call, ExecContext& ctx) {
  const tsr_dtype a = call.in[0].dtype;
  if (a == TSR_DTYPE_F32) return LinearW8Impl<float>(call, ctx);
  if (a == TSR_DTYPE_BF16) return LinearW8Impl<Bf16>(call, ctx);
  return Internal("linear v2 has no kernel for ", DTypeName(a), " activations");
}

}  // namespace tessera::cpu
