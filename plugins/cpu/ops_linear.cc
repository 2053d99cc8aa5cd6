// linear: x A (T, K), w W (N, K) row-major with unit innermost stride,
// optional bias A (N) -> y A (T, N); y = x w^T (+ bias).
//
// Blocked loop: x is converted to f32 in blocks of TB rows (about 1 MiB),
// then the N output features are split across the pool in panels of 16
// weight rows (converted to f32 when W is bf16/f16); a 2x4 micro-kernel of
// 8-wide vector accumulators computes the dot products, each pair of x rows
// meeting all 16 rows of the panel while it sits in L1. On x86-64 the micro-kernel
// is also compiled for x86-64-v3 (AVX2+FMA) and picked at load time.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops.h"
#include "ops_common.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TSR_CPU_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define TSR_CPU_CLONES
#endif

namespace tessera::cpu {
namespace {

typedef float V8 __attribute__((vector_size(32)));

// always_inline: a 32-byte vector returned across a call between a
// target_clones clone (AVX2) and a default-ABI function is passed
// differently on each side; at -O0 nothing would inline it otherwise.
__attribute__((always_inline)) inline V8 Load8(const float* p) {
  V8 v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

__attribute__((always_inline)) inline float HSum(V8 v) {
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

constexpr int64_t kPanel = 16;  // weight rows per panel (4 groups of 4)

// s[r * 4 + j] = dot(x_r, w_j) for r < 2, j < 4, over k floats.
__attribute__((always_inline)) inline void Kernel2x4(const float* x0, const float* x1,
                                                     const float* const* w, int64_t k,
                                                     float* s) {
  const int64_t k8 = k & ~int64_t{7};
  const float *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3];
  V8 a00 = {}, a01 = {}, a02 = {}, a03 = {}, a10 = {}, a11 = {}, a12 = {}, a13 = {};
  for (int64_t i = 0; i < k8; i += 8) {
    V8 v0 = Load8(x0 + i), v1 = Load8(x1 + i);
    V8 b = Load8(w0 + i);
    a00 += v0 * b;
    a10 += v1 * b;
    b = Load8(w1 + i);
    a01 += v0 * b;
    a11 += v1 * b;
    b = Load8(w2 + i);
    a02 += v0 * b;
    a12 += v1 * b;
    b = Load8(w3 + i);
    a03 += v0 * b;
    a13 += v1 * b;
  }
  s[0] = HSum(a00), s[1] = HSum(a01), s[2] = HSum(a02), s[3] = HSum(a03);
  s[4] = HSum(a10), s[5] = HSum(a11), s[6] = HSum(a12), s[7] = HSum(a13);
  for (int64_t i = k8; i < k; ++i) {
    for (int j = 0; j < 4; ++j) {
      s[j] += x0[i] * w[j][i];
      s[4 + j] += x1[i] * w[j][i];
    }
  }
}

__attribute__((always_inline)) inline void Kernel1x4(const float* x0, const float* const* w,
                                                     int64_t k, float* s) {
  const int64_t k8 = k & ~int64_t{7};
  const float *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3];
  V8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
  for (int64_t i = 0; i < k8; i += 8) {
    V8 v0 = Load8(x0 + i);
    a0 += v0 * Load8(w0 + i);
    a1 += v0 * Load8(w1 + i);
    a2 += v0 * Load8(w2 + i);
    a3 += v0 * Load8(w3 + i);
  }
  s[0] = HSum(a0), s[1] = HSum(a1), s[2] = HSum(a2), s[3] = HSum(a3);
  for (int64_t i = k8; i < k; ++i) {
    for (int j = 0; j < 4; ++j) s[j] += x0[i] * w[j][i];
  }
}

// dst[i] = src[i] as f32, vectorised (and cloned for x86-64-v3).
TSR_CPU_CLONES
void RowToF32(const F16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = ToF32(src[i]);
}
TSR_CPU_CLONES
void RowToF32(const Bf16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = ToF32(src[i]);
}
void RowToF32(const float* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

// out[t * kPanel + j] = dot(xb[t], w[j]) for t < tb, j < 4 * groups: each
// pair of x rows stays in L1 while it meets every weight row of the panel.
TSR_CPU_CLONES
void MatmulPanel(const float* xb, int64_t tb, int64_t k, const float* const* w, int64_t groups,
                 float* out) {
  int64_t t = 0;
  for (; t + 2 <= tb; t += 2) {
    const float* x0 = xb + t * k;
    for (int64_t g = 0; g < groups; ++g) {
      float s[8];
      Kernel2x4(x0, x0 + k, w + 4 * g, k, s);
      for (int j = 0; j < 4; ++j) {
        out[t * kPanel + 4 * g + j] = s[j];
        out[(t + 1) * kPanel + 4 * g + j] = s[4 + j];
      }
    }
  }
  if (t < tb) {
    for (int64_t g = 0; g < groups; ++g) {
      float s[4];
      Kernel1x4(xb + t * k, w + 4 * g, k, s);
      for (int j = 0; j < 4; ++j) out[t * kPanel + 4 * g + j] = s[j];
    }
  }
}

template <typename A, typename W>
Status LinearImpl(const OpCall& call, ExecContext& ctx) {
  const TensorView &x = call.in[0], &w = call.in[1], &y = call.out[0];
  const TensorView* bias = call.num_inputs == 3 ? &call.in[2] : nullptr;
  const int64_t t_count = x.dim(0), k = x.dim(1), n = w.dim(0);
  if (t_count == 0 || n == 0) return OkStatus();

  std::vector<float> bias_f(n, 0.0f);
  if (bias != nullptr) {
    for (int64_t j = 0; j < n; ++j) bias_f[j] = ToF32(bias->as<A>()[j * bias->stride(0)]);
  }
  int64_t tb_max = std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(k, 1), 4, 256);
  tb_max = std::min(tb_max, t_count);
  std::vector<float> xb(static_cast<size_t>(tb_max * k));
  const int64_t panels = (n + kPanel - 1) / kPanel;

  for (int64_t t0 = 0; t0 < t_count; t0 += tb_max) {
    const int64_t tb = std::min(tb_max, t_count - t0);
    ctx.pool->ParallelFor(tb, RowGrain(k), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const A* xr = x.as<A>() + (t0 + t) * x.stride(0);
        float* dst = xb.data() + t * k;
        if (x.stride(1) == 1) {
          RowToF32(xr, dst, k);
        } else {
          for (int64_t i = 0; i < k; ++i) dst[i] = ToF32(xr[i * x.stride(1)]);
        }
      }
    });
    // Work items are (panel, row part): rows are split too when there are
    // too few panels to keep every thread busy.
    const int64_t want = int64_t{ctx.pool->size()} * 2;
    const int64_t parts = panels >= want ? 1 : std::min<int64_t>((tb + 7) / 8, (want + panels - 1) / panels);
    const int64_t item_cost = std::max<int64_t>(tb / parts * k * kPanel, 1);
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / item_cost);
    ctx.pool->ParallelFor(panels * parts, grain, [&](int64_t begin, int64_t end) {
      std::vector<float> wconv;
      if constexpr (!std::is_same_v<W, float>) wconv.resize(static_cast<size_t>(kPanel * k));
      std::vector<float> out(static_cast<size_t>(tb * kPanel));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t panel = item / parts, part = item % parts;
        const int64_t r0 = tb * part / parts, r1 = tb * (part + 1) / parts;
        const int64_t n0 = panel * kPanel;
        const int64_t nb = std::min<int64_t>(kPanel, n - n0);
        const int64_t groups = (nb + 3) / 4;
        const float* rows[kPanel];
        for (int64_t j = 0; j < 4 * groups; ++j) {
          const int64_t row = n0 + std::min(j, nb - 1);  // pad with the last row
          const W* wr = w.as<W>() + row * w.stride(0);
          if constexpr (std::is_same_v<W, float>) {
            rows[j] = wr;
          } else {
            float* dst = wconv.data() + j * k;
            if (j < nb) RowToF32(wr, dst, k);
            rows[j] = j < nb ? dst : wconv.data() + (nb - 1) * k;
          }
        }
        MatmulPanel(xb.data() + r0 * k, r1 - r0, k, rows, groups, out.data());
        for (int64_t t = r0; t < r1; ++t) {
          A* yr = y.as<A>() + (t0 + t) * y.stride(0);
          const float* o = out.data() + (t - r0) * kPanel;
          for (int64_t j = 0; j < nb; ++j) {
            yr[(n0 + j) * y.stride(1)] = FromF32<A>(o[j] + bias_f[n0 + j]);
          }
        }
      }
    });
  }
  return OkStatus();
}

}  // namespace

Status CheckLinear(const OpCall& call) {
  const TensorView &x = call.in[0], &w = call.in[1], &y = call.out[0];
  TSR_CPU_RETURN_IF_ERROR(RequireRank(x, "x", 2));
  TSR_CPU_RETURN_IF_ERROR(RequireRank(w, "w", 2));
  TSR_CPU_RETURN_IF_ERROR(RequireDim(w, "w", 1, x.dim(1), "K (x's dim 1)"));
  if (w.dim(1) > 1 && w.stride(1) != 1) {
    return InvalidArgument("w must have a unit innermost stride, but its strides are [",
                           w.stride(0), ", ", w.stride(1), "]");
  }
  if (call.num_inputs == 3) {
    TSR_CPU_RETURN_IF_ERROR(RequireRank(call.in[2], "bias", 1));
    TSR_CPU_RETURN_IF_ERROR(RequireDim(call.in[2], "bias", 0, w.dim(0), "N (w's dim 0)"));
  }
  TSR_CPU_RETURN_IF_ERROR(RequireRank(y, "y", 2));
  TSR_CPU_RETURN_IF_ERROR(RequireDim(y, "y", 0, x.dim(0), "T (x's dim 0)"));
  return RequireDim(y, "y", 1, w.dim(0), "N (w's dim 0)");
}

Status RunLinear(const OpCall& call, ExecContext& ctx) {
  const tsr_dtype a = call.in[0].dtype, w = call.in[1].dtype;
  if (a == TSR_DTYPE_F32 && w == TSR_DTYPE_F32) return LinearImpl<float, float>(call, ctx);
  if (a == TSR_DTYPE_F32 && w == TSR_DTYPE_F16) return LinearImpl<float, F16>(call, ctx);
  if (a == TSR_DTYPE_BF16 && w == TSR_DTYPE_BF16) return LinearImpl<Bf16, Bf16>(call, ctx);
  if (a == TSR_DTYPE_BF16 && w == TSR_DTYPE_F16) return LinearImpl<Bf16, F16>(call, ctx);
  return Internal("linear has no kernel for ", DTypeName(a), " x ", DTypeName(w));
}

}  // namespace tessera::cpu
