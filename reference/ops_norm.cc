// rms_norm and add_rms_norm (tessera_plugin.h, TSR_OP_RMS_NORM / _ADD_).
#include <cmath>
#include <cstddef>
#include <vector>

#include "reference/ops_internal.h"

namespace tessera::reference::internal {
namespace {

constexpr size_t kRmsNormParamsSize =
    offsetof(tsr_rms_norm_params, eps) + sizeof(float);

// Checks x [.., H] and w [H]; returns H.
StatusOr<int64_t> CheckNormInputs(const OpCall& call, const HostTensor& x,
                                  const HostTensor& w) {
  if (x.ndim() < 1) {
    return InvalidArgumentError(
        fmt::format("{}: x is a scalar; it needs at least one dim ([.., H])",
                    call.op_name));
  }
  int64_t hidden = x.shape.back();
  if (hidden < 1) {
    return InvalidArgumentError(
        fmt::format("{}: x has shape {}; the normalised dim H must be >= 1",
                    call.op_name, ShapeString(x.shape)));
  }
  TSR_RETURN_IF_ERROR(
      ExpectShape(call, w, "w", {hidden}, "[H], H the last dim of x"));
  return hidden;
}

// y[row] = v / sqrt(mean(v^2) + eps) * w, for one row held in `v`.
void NormRow(const std::vector<double>& v, const HostTensor& w, double eps,
             const HostTensor& y, int64_t y_row) {
  const int64_t hidden = static_cast<int64_t>(v.size());
  double sum_sq = 0;
  for (double a : v) sum_sq += a * a;
  double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(hidden) + eps);
  for (int64_t h = 0; h < hidden; ++h) {
    y.Store(y_row + h * y.strides.back(),
            v[h] * inv_rms * w.Load(h * w.strides[0]));
  }
}

}  // namespace

// in x X [.., H], w X [H]; out y X [.., H]. y may alias x exactly.
Status RmsNorm(const OpCall& call) {
  const HostTensor& x = call.in[0];
  const HostTensor& w = call.in[1];
  const HostTensor& y = call.out[0];
  TSR_ASSIGN_OR_RETURN(int64_t hidden, CheckNormInputs(call, x, w));
  TSR_RETURN_IF_ERROR(ExpectShape(call, y, "y", x.shape, "the shape of x"));
  TSR_ASSIGN_OR_RETURN(
      auto params, ReadParams<tsr_rms_norm_params>(call, kRmsNormParamsSize));
  if (!call.execute) return OkStatus();

  std::vector<int64_t> x_rows = RowOffsets(x), y_rows = RowOffsets(y);
  std::vector<double> v(hidden);
  for (size_t r = 0; r < x_rows.size(); ++r) {
    for (int64_t h = 0; h < hidden; ++h) {
      v[h] = x.Load(x_rows[r] + h * x.strides.back());
    }
    NormRow(v, w, params.eps, y, y_rows[r]);
  }
  return OkStatus();
}

// in x, residual X [.., H], w X [H]; out y, residual_out X [.., H].
// residual_out = round_X(x + residual); y = rms_norm(residual_out).
Status AddRmsNorm(const OpCall& call) {
  const HostTensor& x = call.in[0];
  const HostTensor& residual = call.in[1];
  const HostTensor& w = call.in[2];
  const HostTensor& y = call.out[0];
  const HostTensor& residual_out = call.out[1];
  TSR_ASSIGN_OR_RETURN(int64_t hidden, CheckNormInputs(call, x, w));
  TSR_RETURN_IF_ERROR(
      ExpectShape(call, residual, "residual", x.shape, "the shape of x"));
  TSR_RETURN_IF_ERROR(ExpectShape(call, y, "y", x.shape, "the shape of x"));
  TSR_RETURN_IF_ERROR(ExpectShape(call, residual_out, "residual_out", x.shape,
                                  "the shape of x"));
  TSR_ASSIGN_OR_RETURN(
      auto params, ReadParams<tsr_rms_norm_params>(call, kRmsNormParamsSize));
  if (!call.execute) return OkStatus();

  std::vector<int64_t> x_rows = RowOffsets(x), r_rows = RowOffsets(residual),
                       y_rows = RowOffsets(y),
                       ro_rows = RowOffsets(residual_out);
  std::vector<double> v(hidden);
  for (size_t r = 0; r < x_rows.size(); ++r) {
    for (int64_t h = 0; h < hidden; ++h) {
      double sum = x.Load(x_rows[r] + h * x.strides.back()) +
                   residual.Load(r_rows[r] + h * residual.strides.back());
      v[h] = RoundTo(x.dtype, sum);
    }
    for (int64_t h = 0; h < hidden; ++h) {
      residual_out.Store(ro_rows[r] + h * residual_out.strides.back(), v[h]);
    }
    NormRow(v, w, params.eps, y, y_rows[r]);
  }
  return OkStatus();
}

}  // namespace tessera::reference::internal
