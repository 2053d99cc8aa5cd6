// linear v2 (weight-only int8, ABI 1.1): x A (T, K), w I8 (N, K) with unit
// innermost stride, w_scale F32 (N, K / G), optional bias A (N)
// -> y A (T, N); y[t, n] = sum_k x[t, k] * w[n, k] * w_scale[n, k / G] (+ bias).
//
// The driver around the per-ISA kernels (ops_linear_w8_kernels.h), laid
// out like linear v1's (ops_linear.cc):
//  - x is made f32 and contiguous once per call (used in place when it
//    already is); w_scale likewise (it is small).
//  - Rows of x go in blocks of at most ~1 MiB; within a block the work items
//    are (range of kBlockN weight rows, part of the block's rows), N-major,
//    handed to the pool in contiguous chunks, so for decode every thread
//    streams its own disjoint int8 rows once.
//  - An item with few x rows (decode) runs the int8 block kernel, which
//    widens weights in registers. An item with many rows (prefill)
//    dequantises its kBlockN weight rows once into a per-thread f32 panel
//    and runs the f32 x f32 linear kernel on it, so each dequantised panel
//    is reused from cache by every row of the block.
//  - Results land in a per-chunk f32 scratch, bias is added, and they are
//    rounded once to A through y's strides.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu_isa.h"
#include "ops.h"
#include "ops_common.h"
#include "ops_linear_kernels.h"
#include "ops_linear_w8_kernels.h"

namespace tessera::cpu {
namespace {

constexpr int64_t kBlockN = 64;             // weight rows per work item
constexpr int64_t kBlockBytes = 1 << 20;    // x bytes per row block
constexpr int64_t kMinChunkMacs = 1 << 17;  // below this a chunk is not worth a thread
constexpr int64_t kPanelRows = 16;          // x rows from which an item dequantises

template <typename A>
Status LinearW8Impl(const OpCall& call, ExecContext& ctx) {
  const TensorView &x = call.in[0], &w = call.in[1], &scale = call.in[2], &y = call.out[0];
  const TensorView* bias = call.num_inputs == 4 ? &call.in[3] : nullptr;
  const int64_t t_count = x.dim(0), k = x.dim(1), n = w.dim(0);
  const int64_t group = call.params.linear_w8.group_size;
  if (t_count == 0 || n == 0) return OkStatus();

  std::vector<float> bias_f(n, 0.0f);
  if (bias != nullptr) {
    for (int64_t j = 0; j < n; ++j) bias_f[j] = ToF32(bias->as<A>()[j * bias->stride(0)]);
  }
  if (k == 0) {  // no products: y = bias
    for (int64_t t = 0; t < t_count; ++t) {
      A* yr = y.as<A>() + t * y.stride(0);
      for (int64_t j = 0; j < n; ++j) yr[j * y.stride(1)] = FromF32<A>(bias_f[j]);
    }
    return OkStatus();
  }

  // x as f32 [T, ldx].
  const float* xp;
  int64_t ldx;
  std::vector<float> x_packed;
  if (std::is_same_v<A, float> && (x.stride(1) == 1 || k <= 1)) {
    xp = reinterpret_cast<const float*>(x.data);
    ldx = x.stride(0);
  } else {
    x_packed.resize(static_cast<size_t>(t_count * k));
    ctx.pool->ParallelFor(t_count, RowGrain(k, 1 << 16), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const A* xr = x.as<A>() + t * x.stride(0);
        float* d = x_packed.data() + t * k;
        for (int64_t i = 0; i < k; ++i) d[i] = ToF32(xr[i * x.stride(1)]);
      }
    });
    xp = x_packed.data();
    ldx = k;
  }
  // w_scale as f32 [N, lds] with unit inner stride.
  const int64_t groups = k / group;
  const float* sp;
  int64_t lds;
  std::vector<float> s_packed;
  if (scale.stride(1) == 1 || groups <= 1) {
    sp = scale.as<float>();
    lds = scale.stride(0);
  } else {
    s_packed.resize(static_cast<size_t>(n * groups));
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t g = 0; g < groups; ++g) {
        s_packed[j * groups + g] = scale.as<float>()[j * scale.stride(0) + g * scale.stride(1)];
      }
    }
    sp = s_packed.data();
    lds = groups;
  }
  const int8_t* wp = w.as<int8_t>();
  const int64_t ldw = w.stride(0);

  const LinearW8Kernels& kernels = LinearW8KernelsFor(ActiveCpuIsa());
  const LinearW8BlockFn block = group == k || group % kernels.group_multiple == 0
                                    ? kernels.block
                                    : ScalarLinearW8Kernels().block;
  const auto panel_kernel = LinearKernelsFor(ActiveCpuIsa()).f32_f32;

  const int64_t mb_max = std::min<int64_t>(
      t_count, std::max<int64_t>(16, kBlockBytes / std::max<int64_t>(1, k * 4)));
  const int64_t n_items = (n + kBlockN - 1) / kBlockN;
  const int64_t want = int64_t{ctx.pool->size()} * 2;
  for (int64_t m0 = 0; m0 < t_count; m0 += mb_max) {
    const int64_t mb = std::min(mb_max, t_count - m0);
    const int64_t parts =
        n_items >= want ? 1 : std::min<int64_t>((mb + 3) / 4, (want + n_items - 1) / n_items);
    const int64_t item_macs = std::max<int64_t>(1, mb / parts * k * std::min(n, kBlockN));
    const int64_t grain = std::max<int64_t>(1, kMinChunkMacs / item_macs);
    ctx.pool->ParallelFor(n_items * parts, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> out(static_cast<size_t>((mb / parts + 1) * kBlockN));
      std::vector<float> panel;
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n0 = item / parts * kBlockN, part = item % parts;
        const int64_t nb = std::min(kBlockN, n - n0);
        const int64_t r0 = mb * part / parts, r1 = mb * (part + 1) / parts;
        const float* xr = xp + (m0 + r0) * ldx;
        if (r1 - r0 >= kPanelRows) {
          panel.resize(static_cast<size_t>(nb * k));
          kernels.dequant(wp + n0 * ldw, ldw, sp + n0 * lds, lds, nb, k, group, panel.data());
          panel_kernel(xr, ldx, r1 - r0, panel.data(), k, nb, k, out.data(), kBlockN);
        } else {
          block(xr, ldx, r1 - r0, wp + n0 * ldw, ldw, sp + n0 * lds, lds, nb, k, group,
                out.data(), kBlockN);
        }
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

}  // namespace

Status RunLinearW8(const OpCall& call, ExecContext& ctx) {
  const tsr_dtype a = call.in[0].dtype;
  if (a == TSR_DTYPE_F32) return LinearW8Impl<float>(call, ctx);
  if (a == TSR_DTYPE_BF16) return LinearW8Impl<Bf16>(call, ctx);
  return Internal("linear v2 has no kernel for ", DTypeName(a), " activations");
}

}  // namespace tessera::cpu
