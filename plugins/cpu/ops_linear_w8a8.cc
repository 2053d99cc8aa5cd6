// linear v3 (w8a8, ABI 1.5): x A (T, K), w I8 (N, K) with unit innermost
// stride, w_scale F32 (N, K / G), optional bias A (N) -> y A (T, N), x
// quantised per row in blocks of G and multiplied in int8 (the contract:
// tessera_plugin.h). linear v4 (w4a8, ABI 1.6) is the same with w U8
// (N, K / 2), 4-bit weights packed as Q4_0, and F16 scales (the kernels'
// block_w4); linear v5 (w6a8, ABI 1.8) with w U8 (N, K / 256 * 208), Q6_K
// super-blocks, and their F16 d's (block_w6).
//
// The driver around the per-ISA kernels (ops_linear_w8a8_kernels.h):
//  - x is made f32 (in place when it already is) and quantised once per
//    call, rows split over the pool, into q int8 [T, K] and s f32
//    [T, K / G] allocated per call (small next to the weights);
//  - row blocks, work items and output rounding are linear v1's
//    (ops_linear_driver.h), so for decode every thread streams its own
//    disjoint int8 weight rows once, and for prefill each group of 4
//    weight rows meets every quantised x row of the block from L1.
// Unlike v2 there is no dequantised prefill panel: the int8 dot products
// are the prefill kernel too.
#include <vector>

#include "cpu_isa.h"
#include "ops.h"
#include "ops_common.h"
#include "ops_linear_driver.h"
#include "ops_linear_w8a8_kernels.h"

namespace tessera::cpu {
namespace {

template <typename A>
Status LinearW8A8Impl(const OpCall& call, ExecContext& ctx) {
  LinearInt8Call c;
  if (!PrepareLinearInt8<A>(call, &c)) return OkStatus();
  const int64_t t_count = c.t_count, k = c.k, group = c.group, groups = k / group;

  const LinearW8A8Kernels& kernels = LinearW8A8KernelsFor(ActiveCpuIsa());
  // v4: every path's block_w4 takes the contract's G % 32 == 0.
  const bool w4 = call.version == 4;
  const bool w6 = call.version == 5;
  const LinearW6A8BlockFn block_w6 =
      kernels.w6_group == 0 || group == kernels.w6_group ? kernels.block_w6
                                                         : ScalarLinearW8A8Kernels().block_w6;
  const LinearW8A8BlockFn block =
      group % kernels.group_multiple == 0 ? kernels.block : ScalarLinearW8A8Kernels().block;

  // x as f32, then quantised: xq [T, K], xs [T, groups].
  std::vector<float> x_packed;
  int64_t ldx = 0;
  const float* xp = LinearXAs<A, float>(call.in[0], t_count, k, &x_packed, &ldx, ctx);
  std::vector<int8_t> xq(static_cast<size_t>(t_count * k));
  std::vector<float> xs(static_cast<size_t>(t_count * groups));
  ctx.pool->ParallelFor(t_count, RowGrain(k, 1 << 15), [&](int64_t begin, int64_t end) {
    kernels.quantize(xp + begin * ldx, ldx, end - begin, k, group, xq.data() + begin * k, k,
                     xs.data() + begin * groups, groups);
    if (w4 && kernels.permute_w4 != nullptr) {
      kernels.permute_w4(xq.data() + begin * k, k, end - begin, k);
    }
  });

  RunLinearItems<A>(ctx, call.out[0], c.bias_f, t_count, c.n, k, k,
                    [&](int64_t row, int64_t rows, int64_t n0, int64_t nb, float* out) {
                      if (w6) {
                        block_w6(xq.data() + row * k, k, xs.data() + row * groups, groups,
                                 rows, reinterpret_cast<const uint8_t*>(c.w) + n0 * c.ldw,
                                 c.ldw, c.scales16 + n0 * c.lds, c.lds, nb, k, group, out,
                                 kLinearBlockN);
                      } else if (w4) {
                        kernels.block_w4(xq.data() + row * k, k, xs.data() + row * groups,
                                         groups, rows, c.w + n0 * c.ldw, c.ldw,
                                         c.scales16 + n0 * c.lds, c.lds, nb, k, group, out,
                                         kLinearBlockN);
                      } else {
                        block(xq.data() + row * k, k, xs.data() + row * groups, groups, rows,
                              c.w + n0 * c.ldw, c.ldw, c.scales + n0 * c.lds, c.lds, nb, k,
                              group, out, kLinearBlockN);
                      }
                    });
  return OkStatus();
}

}  // namespace

Status RunLinearW8A8(const OpCall& call, ExecContext& ctx) {
  const tsr_dtype a = call.in[0].dtype;
  if (a == TSR_DTYPE_F32) return LinearW8A8Impl<float>(call, ctx);
  if (a == TSR_DTYPE_BF16) return LinearW8A8Impl<Bf16>(call, ctx);
  return Internal("linear v3 has no kernel for ", DTypeName(a), " activations");
}

}  // namespace tessera::cpu
