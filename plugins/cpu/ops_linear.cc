// linear: x A (T, K), w W (N, K) row-major with unit innermost stride,
// optional bias A (N) -> y A (T, N); y = x w^T (+ bias).
//
// The driver around the per-ISA block kernels (ops_linear_kernels.h; the
// path is the one InitPlugin chose, cpu_isa.h):
//  - x is made contiguous once per call: kept as bf16 when the path has a
//    bf16 x bf16 kernel (bf16 x and bf16 w), else converted to f32.
//    Weights are never converted in memory; kernels widen them in registers.
//  - Rows of x are processed in blocks of at most ~1 MiB (so a block stays
//    in L2); within a block the work items are (N range of kBlockN weight
//    rows, part of the block's rows), N-major, and the pool hands each
//    thread contiguous items: for decode (few rows) every thread streams its
//    own disjoint range of weight rows once; for prefill each group of 4
//    weight rows is loaded once per block and reused from L1 by every row.
//  - Results land in a per-chunk f32 scratch [rows, kBlockN], then bias is
//    added and they are rounded to A and stored through y's strides.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu_isa.h"
#include "ops.h"
#include "ops_common.h"
#include "ops_linear_kernels.h"

namespace tessera::cpu {
namespace {

constexpr int64_t kBlockN = 64;             // weight rows per work item
constexpr int64_t kBlockBytes = 1 << 20;    // x bytes per row block
constexpr int64_t kMinChunkMacs = 1 << 17;  // below this a chunk is not worth a thread

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

// Copies x (T, K; any strides) into dst [T, K] contiguous as XT (f32, or bf16
// bits when A is bf16 and XT is uint16_t).
template <typename A, typename XT>
void PackX(const TensorView& x, int64_t t_count, int64_t k, XT* dst, ExecContext& ctx) {
  ctx.pool->ParallelFor(t_count, RowGrain(k, 1 << 16), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const A* xr = x.as<A>() + t * x.stride(0);
      XT* d = dst + t * k;
      const int64_t s = x.stride(1);
      if constexpr (std::is_same_v<XT, uint16_t>) {
        for (int64_t i = 0; i < k; ++i) d[i] = xr[i * s].bits;
      } else {
        for (int64_t i = 0; i < k; ++i) d[i] = ToF32(xr[i * s]);
      }
    }
  });
}

// Weight storage as the kernels see it: f32, or the 16-bit pattern.
template <typename W>
using WStore = std::conditional_t<std::is_same_v<W, float>, float, uint16_t>;

template <typename A, typename W, typename XT>
Status LinearWith(const OpCall& call, ExecContext& ctx, LinearBlockFn<XT, WStore<W>> kernel) {
  const TensorView &x = call.in[0], &w = call.in[1], &y = call.out[0];
  const TensorView* bias = call.num_inputs == 3 ? &call.in[2] : nullptr;
  const int64_t t_count = x.dim(0), k = x.dim(1), n = w.dim(0);

  std::vector<float> bias_f(n, 0.0f);
  if (bias != nullptr) {
    for (int64_t j = 0; j < n; ++j) bias_f[j] = ToF32(bias->as<A>()[j * bias->stride(0)]);
  }
  // x as XT, [T, ldx]: used in place when it already is (unit inner stride).
  const XT* xp;
  int64_t ldx;
  std::vector<XT> x_packed;
  constexpr bool kSameX = std::is_same_v<A, float> == std::is_same_v<XT, float>;
  if (kSameX && (x.stride(1) == 1 || k <= 1)) {
    xp = reinterpret_cast<const XT*>(x.data);
    ldx = x.stride(0);
  } else {
    x_packed.resize(static_cast<size_t>(t_count * k));
    PackX<A, XT>(x, t_count, k, x_packed.data(), ctx);
    xp = x_packed.data();
    ldx = k;
  }
  const WStore<W>* wp = reinterpret_cast<const WStore<W>*>(w.data);
  const int64_t ldw = w.stride(0);

  const int64_t mb_max = std::min<int64_t>(
      t_count, std::max<int64_t>(16, kBlockBytes / std::max<int64_t>(1, k * sizeof(XT))));
  const int64_t n_items = (n + kBlockN - 1) / kBlockN;
  const int64_t want = int64_t{ctx.pool->size()} * 2;
  for (int64_t m0 = 0; m0 < t_count; m0 += mb_max) {
    const int64_t mb = std::min(mb_max, t_count - m0);
    // Split rows too when there are too few weight ranges for the threads.
    const int64_t parts =
        n_items >= want ? 1 : std::min<int64_t>((mb + 3) / 4, (want + n_items - 1) / n_items);
    const int64_t item_macs = std::max<int64_t>(1, mb / parts * k * std::min(n, kBlockN));
    const int64_t grain = std::max<int64_t>(1, kMinChunkMacs / item_macs);
    ctx.pool->ParallelFor(n_items * parts, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> out(static_cast<size_t>((mb / parts + 1) * kBlockN));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n0 = item / parts * kBlockN, part = item % parts;
        const int64_t nb = std::min(kBlockN, n - n0);
        const int64_t r0 = mb * part / parts, r1 = mb * (part + 1) / parts;
        kernel(xp + (m0 + r0) * ldx, ldx, r1 - r0, wp + n0 * ldw, ldw, nb, k, out.data(), kBlockN);
        for (int64_t r = r0; r < r1; ++r) {
          A* yr = y.as<A>() + (m0 + r) * y.stride(0) + n0 * y.stride(1);
          const float* o = out.data() + (r - r0) * kBlockN;
          const float* b = bias_f.data() + n0;
          for (int64_t j = 0; j < nb; ++j) yr[j * y.stride(1)] = FromF32<A>(o[j] + b[j]);
        }
      }
    });
  }
  return OkStatus();
}

template <typename A, typename W>
Status LinearImpl(const OpCall& call, ExecContext& ctx) {
  if (call.in[0].dim(0) == 0 || call.in[1].dim(0) == 0) return OkStatus();
  const LinearKernels& kernels = LinearKernelsFor(ActiveCpuIsa());
  if constexpr (std::is_same_v<A, Bf16> && std::is_same_v<W, Bf16>) {
    if (kernels.bf16_bf16 != nullptr) {
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
