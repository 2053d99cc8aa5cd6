// rms_norm and add_rms_norm over rows of any leading shape:
//   x (.., H), w (H) -> y (.., H); add_rms_norm also residual (.., H) ->
//   residual_out (.., H). Sums of squares accumulate in f64.
#include <cmath>

#include "ops.h"
#include "ops_common.h"

namespace tessera::cpu {
namespace {

// y = x * inv_rms * w along one row of H elements.
template <typename T>
void NormalizeRow(const T* x, int64_t sx, const T* w, int64_t sw, T* y, int64_t sy, int64_t h,
                  float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < h; ++i) {
    double v = ToF32(x[i * sx]);
    sum += v * v;
  }
  float inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(h) + eps));
  for (int64_t i = 0; i < h; ++i) {
    y[i * sy] = FromF32<T>(ToF32(x[i * sx]) * inv * ToF32(w[i * sw]));
  }
}

}  // namespace

Status RunRmsNorm(const OpCall& call, ExecContext& ctx) {
  const TensorView &x = call.in[0], &w = call.in[1], &y = call.out[0];
  const int64_t h = x.cols();
  const float eps = call.params.rms_norm.eps;
  return DispatchFloat(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    ctx.pool->ParallelFor(x.rows(), RowGrain(h), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        NormalizeRow(x.as<T>() + x.RowOffset(r), x.col_stride(), w.as<T>(), w.stride(0),
                     y.as<T>() + y.RowOffset(r), y.col_stride(), h, eps);
      }
    });
    return OkStatus();
  });
}

Status RunAddRmsNorm(const OpCall& call, ExecContext& ctx) {
  const TensorView &x = call.in[0], &res = call.in[1], &w = call.in[2];
  const TensorView &y = call.out[0], &res_out = call.out[1];
  const int64_t h = x.cols();
  const float eps = call.params.rms_norm.eps;
  return DispatchFloat(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    ctx.pool->ParallelFor(x.rows(), RowGrain(h), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* xr = x.as<T>() + x.RowOffset(r);
        const T* rr = res.as<T>() + res.RowOffset(r);
        T* ro = res_out.as<T>() + res_out.RowOffset(r);
        // residual_out may alias residual exactly: element i is read, then
        // written, and never read again.
        for (int64_t i = 0; i < h; ++i) {
          ro[i * res_out.col_stride()] =
              FromF32<T>(ToF32(xr[i * x.col_stride()]) + ToF32(rr[i * res.col_stride()]));
        }
        NormalizeRow(static_cast<const T*>(ro), res_out.col_stride(), w.as<T>(), w.stride(0),
                     y.as<T>() + y.RowOffset(r), y.col_stride(), h, eps);
      }
    });
    return OkStatus();
  });
}

}  // namespace tessera::cpu
