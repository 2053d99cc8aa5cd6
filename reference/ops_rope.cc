// rope (tessera_plugin.h, TSR_OP_ROPE).
#include <cmath>
#include <cstddef>
#include <vector>

#include "reference/ops_internal.h"

namespace tessera::reference::internal {
namespace {

// Rotates the first `rotary` dims of every head of one token of `in` into
// `out` (which may be `in` exactly); the rest passes through.
void RotateToken(const HostTensor& in, const HostTensor& out, int64_t t,
                 const std::vector<double>& cos_v,
                 const std::vector<double>& sin_v, int64_t rotary,
                 tsr_rope_style style) {
  const int64_t heads = in.shape[1], dim = in.shape[2];
  const int64_t half = rotary / 2;
  std::vector<double> v(dim), r(dim);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t d = 0; d < dim; ++d) {
      v[d] = in.Load(t * in.strides[0] + h * in.strides[1] + d * in.strides[2]);
    }
    r = v;
    for (int64_t i = 0; i < half; ++i) {
      int64_t a = style == TSR_ROPE_NEOX ? i : 2 * i;
      int64_t b = style == TSR_ROPE_NEOX ? i + half : 2 * i + 1;
      r[a] = v[a] * cos_v[i] - v[b] * sin_v[i];
      r[b] = v[b] * cos_v[i] + v[a] * sin_v[i];
    }
    for (int64_t d = 0; d < dim; ++d) {
      out.Store(t * out.strides[0] + h * out.strides[1] + d * out.strides[2],
                r[d]);
    }
  }
}

}  // namespace

// in positions I32 [T], inv_freq F32 [R/2], q X [T, Hq, D], k X [T, Hk, D];
// out q_out X [T, Hq, D], k_out X [T, Hk, D]. Angle positions[t]*inv_freq[i]
// for pair i: NEOX pairs (i, i + R/2), INTERLEAVED pairs (2i, 2i + 1).
Status Rope(const OpCall& call) {
  const HostTensor& positions = call.in[0];
  const HostTensor& inv_freq = call.in[1];
  const HostTensor& q = call.in[2];
  const HostTensor& k = call.in[3];
  const HostTensor& q_out = call.out[0];
  const HostTensor& k_out = call.out[1];
  TSR_RETURN_IF_ERROR(ExpectRank(call, positions, "positions", 1, "[T]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, inv_freq, "inv_freq", 1, "[R/2]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, q, "q", 3, "[T, Hq, D]"));
  TSR_RETURN_IF_ERROR(ExpectRank(call, k, "k", 3, "[T, Hk, D]"));
  const int64_t tokens = positions.shape[0];
  const int64_t dim = q.shape[2];
  const int64_t rotary = 2 * inv_freq.shape[0];
  TSR_RETURN_IF_ERROR(ExpectShape(call, q, "q", {tokens, q.shape[1], dim},
                                  "[T, Hq, D], T from positions"));
  TSR_RETURN_IF_ERROR(ExpectShape(call, k, "k", {tokens, k.shape[1], dim},
                                  "[T, Hk, D], T from positions, D from q"));
  if (rotary > dim) {
    return InvalidArgumentError(fmt::format(
        "rope: inv_freq has {} entries, so R = {} rotated dims, more than the "
        "head dim D = {}",
        inv_freq.shape[0], rotary, dim));
  }
  TSR_RETURN_IF_ERROR(
      ExpectShape(call, q_out, "q_out", q.shape, "the shape of q"));
  TSR_RETURN_IF_ERROR(
      ExpectShape(call, k_out, "k_out", k.shape, "the shape of k"));
  TSR_ASSIGN_OR_RETURN(auto params, ReadParams<tsr_rope_params>(
                                        call, offsetof(tsr_rope_params, style) +
                                                  sizeof(tsr_rope_style)));
  if (params.style != TSR_ROPE_NEOX && params.style != TSR_ROPE_INTERLEAVED) {
    return InvalidArgumentError(
        fmt::format("rope: params.style is {}; expected TSR_ROPE_NEOX (0) or "
                    "TSR_ROPE_INTERLEAVED (1)",
                    params.style));
  }
  if (!call.execute) return OkStatus();

  const int64_t half = rotary / 2;
  std::vector<double> cos_v(half), sin_v(half);
  for (int64_t t = 0; t < tokens; ++t) {
    double pos =
        static_cast<double>(positions.LoadInt(t * positions.strides[0]));
    for (int64_t i = 0; i < half; ++i) {
      double angle = pos * inv_freq.Load(i * inv_freq.strides[0]);
      cos_v[i] = std::cos(angle);
      sin_v[i] = std::sin(angle);
    }
    RotateToken(q, q_out, t, cos_v, sin_v, rotary, params.style);
    RotateToken(k, k_out, t, cos_v, sin_v, rotary, params.style);
  }
  return OkStatus();
}

}  // namespace tessera::reference::internal
