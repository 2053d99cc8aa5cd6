// linear v1, v2, v3, v4 and v5 (tessera_plugin.h, TSR_OP_LINEAR).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "reference/op_contracts.h"
#include "reference/ops_internal.h"

namespace tessera::reference::internal {
namespace {

// linear v3's activation quantisation of one row, in place: each block of
// `group` values becomes q * s with s = a / 127 and q = x * (127 / a)
// rounded to nearest-even, all in f32 (a = the block's max |x|; 0 when
// a == 0). The contract spells out these exact f32 steps, so q here is
// bit-identical to a conforming plugin's.
void QuantizeDequantizeRowW8A8(std::vector<double>& row, int64_t group) {
  const int64_t k = static_cast<int64_t>(row.size());
  for (int64_t b0 = 0; b0 < k; b0 += group) {
    float amax = 0.0f;
    for (int64_t i = b0; i < b0 + group; ++i) {
      amax = std::max(amax, std::fabs(static_cast<float>(row[i])));
    }
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    const float scale = amax / 127.0f;
    for (int64_t i = b0; i < b0 + group; ++i) {
      const float product = static_cast<float>(row[i]) * inv;
      const double q = std::nearbyint(static_cast<double>(product));
      row[i] = std::clamp(q, -127.0, 127.0) * static_cast<double>(scale);
    }
  }
}

// What v1, v2 and v3 share once their weights are checked: bias [N] and y
// [T, N] shapes, then (when executing) y[t, n] = sum_k x'[t, k] *
// weight(n, k) (+ bias[n]) in double, x' being x (or, for v3 with
// `w8a8_group` > 0, x quantised per block as the contract says: the
// block sums then are s * ws * (an exact integer sum)). x is [T, K].
template <typename WeightAt>
Status CheckBiasAndRun(const OpCall& call, const HostTensor& x, const HostTensor* bias,
                       const HostTensor& y, int64_t out_features, WeightAt weight,
                       int64_t w8a8_group = 0) {
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
    if (w8a8_group > 0) QuantizeDequantizeRowW8A8(row, w8a8_group);
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

namespace {

// linear v2: in x A [T, K], w I8 [N, K], w_scale F32 [N, K / G], optional
// bias A [N]; out y A [T, N]. y[t, n] = sum_k x[t, k] * w[n, k] *
// w_scale[n, k / G] (+ bias[n]), in double. params: tsr_linear_w8_params.
// linear v3: the same with x quantised per row in blocks of G first
// (QuantizeDequantizeRowW8A8). linear v4: v3 with w U8 [N, K / 2], 4-bit
// weights packed per 32-block (byte j: weight j low nibble, j + 16 high),
// each nibble u the weight u - 8; K and G multiples of 32. linear v5: v3
// with w U8 [N, K / 256 * 208] (Q6_K super-blocks without their d) and
// w_scale F16 [N, K / 256] (the d's); K % 256 == 0, G in {32, .., 256}.
Status LinearInt8(const OpCall& call, uint32_t version) {
  const bool activations_int8 = version != kLinearW8Version;
  const bool w4 = version == kLinearW4A8Version;
  const bool w6 = version == kLinearW6A8Version;
  const std::string op = fmt::format("linear v{}", version);
  const HostTensor& x = call.in[0];
  const HostTensor& w = call.in[1];
  const HostTensor& scale = call.in[2];
  const HostTensor* bias = call.in.size() == 4 ? &call.in[3] : nullptr;
  const HostTensor& y = call.out[0];
  if (call.params == nullptr) {
    return InvalidArgumentError(fmt::format(
        "{}: params is NULL; pass a tsr_linear_w8_params with group_size",
        op));
  }
  tsr_linear_w8_params params;
  std::memcpy(&params, call.params, sizeof(params));
  TSR_RETURN_IF_ERROR(ExpectRank(call, x, "x", 2, "[T, K]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, w, "w", 2,
                                  w4 ? "[N, K / 2]" : w6 ? "[N, K / 256 * 208]" : "[N, K]"));
  const int64_t in_features = x.shape[1];
  const int64_t out_features = w.shape[0];
  if (w4 && in_features % 32 != 0) {
    return InvalidArgumentError(fmt::format(
        "{}: K = {} is not a multiple of 32 (4-bit weights are packed in "
        "blocks of 32)", op, in_features));
  }
  if (w6 && in_features % 256 != 0) {
    return InvalidArgumentError(fmt::format(
        "{}: K = {} is not a multiple of 256 (6-bit weights come in Q6_K "
        "super-blocks of 256)", op, in_features));
  }
  const int64_t w_cols = w4   ? in_features / 2
                         : w6 ? in_features / 256 * 208
                              : in_features;
  if (w.shape[1] != w_cols) {
    return InvalidArgumentError(fmt::format(
        "{}: w has shape {} but x has shape {}; w must be [N, {}] = {}", op,
        ShapeString(w.shape), ShapeString(x.shape),
        w4 ? "K / 2" : w6 ? "K / 256 * 208" : "K", w_cols));
  }
  if (w_cols > 1 && w.strides[1] != 1) {
    return InvalidArgumentError(fmt::format(
        "{}: w has strides {}; the contract needs a unit innermost stride",
        op, ShapeString(w.strides)));
  }
  const int64_t group = params.group_size;
  if (w6 && group != 32 && group != 64 && group != 128 && group != 256) {
    return InvalidArgumentError(fmt::format(
        "{}: group_size {} must be 32, 64, 128 or 256 (a block of x within "
        "one Q6_K super-block)", op, group));
  }
  if (group < 1 || (in_features > 0 && in_features % group != 0) ||
      (w4 && group % 32 != 0)) {
    return InvalidArgumentError(fmt::format(
        "{}: group_size {} must be >= 1{} and divide K = {}", op, group,
        w4 ? ", a multiple of 32," : "", in_features));
  }
  const int64_t scale_group = w6 ? 256 : group;
  TSR_RETURN_IF_ERROR(ExpectShape(call, scale, "w_scale",
                                  {out_features, in_features / scale_group},
                                  w6 ? "[N, K / 256]" : "[N, K / group_size]"));
  auto weight_value = [&](int64_t n, int64_t k) -> double {
    if (w6) {
      const uint8_t* blk = static_cast<const uint8_t*>(w.data) +
                           n * w.strides[0] + (k / 256) * 208 * w.strides[1];
      const int64_t i = k % 256, h = i / 128, j = i % 128 / 32, l = i % 32;
      const int lo = (blk[64 * h + 32 * (j & 1) + l] >> (4 * (j >> 1))) & 15;
      const int hi = (blk[128 + 32 * h + l] >> (2 * j)) & 3;
      const int8_t sc = static_cast<int8_t>(blk[192 + i / 16]);
      return double(sc) * ((lo | hi << 4) - 32);
    }
    if (!w4) return w.Load(n * w.strides[0] + k * w.strides[1]);
    const int64_t byte = (k / 32) * 16 + k % 16;
    const uint8_t packed = static_cast<const uint8_t*>(
        w.data)[n * w.strides[0] + byte * w.strides[1]];
    const int nibble = k % 32 < 16 ? packed & 0x0F : packed >> 4;
    return nibble - 8;
  };
  return CheckBiasAndRun(call, x, bias, y, out_features, [&](int64_t n, int64_t k) {
    return weight_value(n, k) *
           scale.Load(n * scale.strides[0] + (k / scale_group) * scale.strides[1]);
  }, activations_int8 ? group : 0);
}

}  // namespace

Status LinearW8(const OpCall& call) { return LinearInt8(call, kLinearW8Version); }
Status LinearW8A8(const OpCall& call) { return LinearInt8(call, kLinearW8A8Version); }
Status LinearW4A8(const OpCall& call) { return LinearInt8(call, kLinearW4A8Version); }
Status LinearW6A8(const OpCall& call) { return LinearInt8(call, kLinearW6A8Version); }

}  // namespace tessera::reference::internal
