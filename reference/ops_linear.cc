// linear v1 and v2 (tessera_plugin.h, TSR_OP_LINEAR).
#include <vector>

#include "reference/ops_internal.h"

namespace tessera::reference::internal {
namespace {

// What v1 and v2 share once their weights are checked: bias [N] and y
// [T, N] shapes, then (when executing) y[t, n] = sum_k x[t, k] *
// weight(n, k) (+ bias[n]) in double. x is [T, K].
template <typename WeightAt>
Status CheckBiasAndRun(const OpCall& call, const HostTensor& x, const HostTensor* bias,
                       const HostTensor& y, int64_t out_features, WeightAt weight) {
  const int64_t tokens = x.shape[0], in_features = x.shape[1];
  if (bias != nullptr) {
    TSR_RETURN_IF_ERROR(
        ExpectShape(call, *bias, "bias", {out_features}, "[N], N rows of w"));
  }
  TSR_RETURN_IF_ERROR(ExpectShape(call, y, "y", {tokens, out_features},
                                  "[T, N]: T from x, N from w"));
  if (!call.execute) return OkStatus();

  std::vector<double> row(in_features);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t k = 0; k < in_features; ++k) {
      row[k] = x.Load(t * x.strides[0] + k * x.strides[1]);
    }
    for (int64_t n = 0; n < out_features; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < in_features; ++k) acc += row[k] * weight(n, k);
      if (bias != nullptr) acc += bias->Load(n * bias->strides[0]);
      y.Store(t * y.strides[0] + n * y.strides[1], acc);
    }
  }
  return OkStatus();
}

}  // namespace

// in x A [T, K], w W [N, K], optional bias A [N]; out y A [T, N].
// y = x w^T (+ bias). w needs a unit innermost stride.
Status Linear(const OpCall& call) {
  const HostTensor& x = call.in[0];
  const HostTensor& w = call.in[1];
  const HostTensor* bias = call.in.size() == 3 ? &call.in[2] : nullptr;
  const HostTensor& y = call.out[0];
  TSR_RETURN_IF_ERROR(ExpectRank(call, x, "x", 2, "[T, K]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, w, "w", 2, "[N, K]"));
  const int64_t in_features = x.shape[1];
  const int64_t out_features = w.shape[0];
  if (w.shape[1] != in_features) {
    return InvalidArgumentError(fmt::format(
        "linear: w has shape {} but x has shape {}; w must be [N, K] with K "
        "= {} (the Hugging Face [out_features, in_features] layout)",
        ShapeString(w.shape), ShapeString(x.shape), in_features));
  }
  if (in_features > 1 && w.strides[1] != 1) {
    return InvalidArgumentError(fmt::format(
        "linear: w has strides {}; the contract needs a unit innermost stride",
        ShapeString(w.strides)));
  }
  return CheckBiasAndRun(call, x, bias, y, out_features, [&](int64_t n, int64_t k) {
    return w.Load(n * w.strides[0] + k * w.strides[1]);
  });
}

// linear v2: in x A [T, K], w I8 [N, K], w_scale F32 [N, K / G], optional
// bias A [N]; out y A [T, N]. y[t, n] = sum_k x[t, k] * w[n, k] *
// w_scale[n, k / G] (+ bias[n]), in double. params: tsr_linear_w8_params.
Status LinearW8(const OpCall& call) {
  const HostTensor& x = call.in[0];
  const HostTensor& w = call.in[1];
  const HostTensor& scale = call.in[2];
  const HostTensor* bias = call.in.size() == 4 ? &call.in[3] : nullptr;
  const HostTensor& y = call.out[0];
  if (call.params == nullptr) {
    return InvalidArgumentError(
        "linear v2: params is NULL; pass a tsr_linear_w8_params with "
        "group_size");
  }
  tsr_linear_w8_params params;
  std::memcpy(&params, call.params, sizeof(params));
  TSR_RETURN_IF_ERROR(ExpectRank(call, x, "x", 2, "[T, K]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, w, "w", 2, "[N, K]"));
  const int64_t in_features = x.shape[1];
  const int64_t out_features = w.shape[0];
  if (w.shape[1] != in_features) {
    return InvalidArgumentError(fmt::format(
        "linear v2: w has shape {} but x has shape {}; w must be [N, K] with "
        "K = {}",
        ShapeString(w.shape), ShapeString(x.shape), in_features));
  }
  if (in_features > 1 && w.strides[1] != 1) {
    return InvalidArgumentError(fmt::format(
        "linear v2: w has strides {}; the contract needs a unit innermost "
        "stride",
        ShapeString(w.strides)));
  }
  const int64_t group = params.group_size;
  if (group < 1 || (in_features > 0 && in_features % group != 0)) {
    return InvalidArgumentError(fmt::format(
        "linear v2: group_size {} must be >= 1 and divide K = {}", group,
        in_features));
  }
  TSR_RETURN_IF_ERROR(ExpectShape(call, scale, "w_scale",
                                  {out_features, in_features / group},
                                  "[N, K / group_size]"));
  return CheckBiasAndRun(call, x, bias, y, out_features, [&](int64_t n, int64_t k) {
    return w.Load(n * w.strides[0] + k * w.strides[1]) *
           scale.Load(n * scale.strides[0] + (k / group) * scale.strides[1]);
  });
}

}  // namespace tessera::reference::internal
