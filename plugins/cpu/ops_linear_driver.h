// What linear v1 (ops_linear.cc), v2 (ops_linear_w8.cc) and v3
// (ops_linear_w8a8.cc) share around their kernels:
//  - the bias widened to f32 once per call (and y = bias when K == 0);
//  - the int8 versions' arguments and scales (made unit-stride) read once
//    per call (PrepareLinearInt8);
//  - x made contiguous once per call (used in place when it already is);
//  - the work split: rows of x in blocks of at most ~1 MiB (so a block stays
//    in L2); within a block the work items are (range of kLinearBlockN
//    weight rows, part of the block's rows), N-major, handed to the pool in
//    contiguous chunks, so for decode every thread streams its own disjoint
//    weight rows once and for prefill each weight panel is reused from cache
//    by every row of the block; rows are split too when there are too few
//    weight ranges for the threads;
//  - results in a per-chunk f32 scratch [rows, kLinearBlockN], bias added,
//    rounded once to A through y's strides.
// Header-only; the callers' compute functions run on pool threads.
#ifndef TESSERA_PLUGINS_CPU_OPS_LINEAR_DRIVER_H_
#define TESSERA_PLUGINS_CPU_OPS_LINEAR_DRIVER_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ops.h"
#include "ops_common.h"

namespace tessera::cpu {

inline constexpr int64_t kLinearBlockN = 64;             // weight rows per work item
inline constexpr int64_t kLinearBlockBytes = 1 << 20;    // x bytes per row block
inline constexpr int64_t kLinearMinChunkMacs = 1 << 17;  // below this a chunk is not worth a thread

// bias (N, any stride) as f32; zeros when there is none.
template <typename A>
std::vector<float> LinearBiasF32(const TensorView* bias, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  if (bias != nullptr) {
    for (int64_t j = 0; j < n; ++j) out[j] = ToF32(bias->as<A>()[j * bias->stride(0)]);
  }
  return out;
}

// x (T, K; any strides) as XT [T, *ldx]: f32, or bf16 bits (XT uint16_t,
// A Bf16). In place when x already is XT with a unit inner stride, else
// packed into `storage`.
template <typename A, typename XT>
const XT* LinearXAs(const TensorView& x, int64_t t_count, int64_t k, std::vector<XT>* storage,
                    int64_t* ldx, ExecContext& ctx) {
  constexpr bool kBf16Bits = std::is_same_v<XT, uint16_t>;
  static_assert(!kBf16Bits || std::is_same_v<A, Bf16>, "bf16 bits only from bf16 x");
  constexpr bool kInPlace = kBf16Bits || (std::is_same_v<A, float> && std::is_same_v<XT, float>);
  if (kInPlace && (x.stride(1) == 1 || k <= 1)) {
    *ldx = x.stride(0);
    return reinterpret_cast<const XT*>(x.data);
  }
  storage->resize(static_cast<size_t>(t_count * k));
  XT* dst = storage->data();
  ctx.pool->ParallelFor(t_count, RowGrain(k, 1 << 16), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const A* xr = x.as<A>() + t * x.stride(0);
      XT* d = dst + t * k;
      const int64_t s = x.stride(1);
      if constexpr (kBf16Bits) {
        for (int64_t i = 0; i < k; ++i) d[i] = xr[i * s].bits;
      } else {
        for (int64_t i = 0; i < k; ++i) d[i] = ToF32(xr[i * s]);
      }
    }
  });
  *ldx = k;
  return dst;
}

// y = bias (or 0) for every row: linear with K == 0 (no products).
template <typename A>
void LinearWriteBiasRows(const TensorView& y, const std::vector<float>& bias_f,
                         int64_t t_count, int64_t n) {
  for (int64_t t = 0; t < t_count; ++t) {
    A* yr = y.as<A>() + t * y.stride(0);
    for (int64_t j = 0; j < n; ++j) yr[j * y.stride(1)] = FromF32<A>(bias_f[j]);
  }
}

// The int8 linears' w_scale (N, K / G; any strides) as S [N, *lds] with a
// unit inner stride (S: float for F32 scales, uint16_t bits for linear v4's
// F16): in place when it already has one, else packed into `storage`.
template <typename S>
const S* LinearScalesAs(const TensorView& scale, int64_t n, int64_t groups,
                        std::vector<S>* storage, int64_t* lds) {
  if (scale.stride(1) == 1 || groups <= 1) {
    *lds = scale.stride(0);
    return scale.as<S>();
  }
  storage->resize(static_cast<size_t>(n * groups));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t g = 0; g < groups; ++g) {
      (*storage)[j * groups + g] = scale.as<S>()[j * scale.stride(0) + g * scale.stride(1)];
    }
  }
  *lds = groups;
  return storage->data();
}

inline const float* LinearScalesF32(const TensorView& scale, int64_t n, int64_t groups,
                                    std::vector<float>* storage, int64_t* lds) {
  return LinearScalesAs<float>(scale, n, groups, storage, lds);
}

// What linear v2, v3 and v4 (int8 or 4-bit weights: x, w I8 / U8, w_scale
// F32 / F16, optional bias) read from their call before the kernels.
// w_scale is f32 (v4: f16) [N, lds]
// with a unit inner stride (`scales` points into the call's tensor or into
// `scales_packed`, so the struct stays where PrepareLinearInt8 filled it).
struct LinearInt8Call {
  LinearInt8Call() = default;
  LinearInt8Call(const LinearInt8Call&) = delete;
  LinearInt8Call& operator=(const LinearInt8Call&) = delete;

  int64_t t_count = 0, k = 0, n = 0, group = 0;
  const int8_t* w = nullptr;  // [N, ldw] (v4: packed bytes)
  int64_t ldw = 0;
  std::vector<float> bias_f;  // [N], zeros without a bias
  const float* scales = nullptr;       // F32 scales (v2, v3)
  const uint16_t* scales16 = nullptr;  // F16 scales' bits (v4)
  int64_t lds = 0;
  std::vector<float> scales_packed;
  std::vector<uint16_t> scales16_packed;
};

// Fills *out from `call`. False when nothing is left to compute: T or N is
// 0, or K is 0 (then y = bias has been written).
template <typename A>
bool PrepareLinearInt8(const OpCall& call, LinearInt8Call* out) {
  const TensorView &x = call.in[0], &w = call.in[1], &scale = call.in[2], &y = call.out[0];
  out->t_count = x.dim(0);
  out->k = x.dim(1);
  out->n = w.dim(0);
  out->group = call.params.linear_w8.group_size;
  if (out->t_count == 0 || out->n == 0) return false;
  out->bias_f = LinearBiasF32<A>(call.num_inputs == 4 ? &call.in[3] : nullptr, out->n);
  if (out->k == 0) {
    LinearWriteBiasRows<A>(y, out->bias_f, out->t_count, out->n);
    return false;
  }
  if (scale.dtype == TSR_DTYPE_F16) {
    // v5 (Q6_K): one f16 d per super-block of 256, whatever G is.
    const int64_t scale_cols = call.version == 5 ? out->k / 256 : out->k / out->group;
    out->scales16 = LinearScalesAs<uint16_t>(scale, out->n, scale_cols,
                                             &out->scales16_packed, &out->lds);
  } else {
    out->scales =
        LinearScalesF32(scale, out->n, out->k / out->group, &out->scales_packed, &out->lds);
  }
  out->w = w.as<int8_t>();
  out->ldw = w.stride(0);
  return true;
}

// Runs the work split above for y (T, N) with x rows of `x_row_bytes`:
// compute(row, rows, n0, nb, out) must set out[r * kLinearBlockN + j] =
// sum_k x[row + r, k] * w[n0 + j, k] for r < rows, j < nb; then bias_f is
// added and y written.
template <typename A, typename Compute>
void RunLinearItems(ExecContext& ctx, const TensorView& y, const std::vector<float>& bias_f,
                    int64_t t_count, int64_t n, int64_t k, int64_t x_row_bytes,
                    const Compute& compute) {
  const int64_t mb_max = std::min<int64_t>(
      t_count, std::max<int64_t>(16, kLinearBlockBytes / std::max<int64_t>(1, x_row_bytes)));
  const int64_t n_items = (n + kLinearBlockN - 1) / kLinearBlockN;
  const int64_t want = int64_t{ctx.pool->size()} * 2;
  for (int64_t m0 = 0; m0 < t_count; m0 += mb_max) {
    const int64_t mb = std::min(mb_max, t_count - m0);
    const int64_t parts =
        n_items >= want ? 1 : std::min<int64_t>((mb + 3) / 4, (want + n_items - 1) / n_items);
    const int64_t item_macs =
        std::max<int64_t>(1, mb / parts * k * std::min(n, kLinearBlockN));
    const int64_t grain = std::max<int64_t>(1, kLinearMinChunkMacs / item_macs);
    ctx.pool->ParallelFor(n_items * parts, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> out(static_cast<size_t>((mb / parts + 1) * kLinearBlockN));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n0 = item / parts * kLinearBlockN, part = item % parts;
        const int64_t nb = std::min(kLinearBlockN, n - n0);
        const int64_t r0 = mb * part / parts, r1 = mb * (part + 1) / parts;
        compute(m0 + r0, r1 - r0, n0, nb, out.data());
        for (int64_t r = r0; r < r1; ++r) {
          A* yr = y.as<A>() + (m0 + r) * y.stride(0) + n0 * y.stride(1);
          const float* o = out.data() + (r - r0) * kLinearBlockN;
          const float* b = bias_f.data() + n0;
          for (int64_t j = 0; j < nb; ++j) yr[j * y.stride(1)] = FromF32<A>(o[j] + b[j]);
        }
      }
    });
  }
}

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPS_LINEAR_DRIVER_H_
