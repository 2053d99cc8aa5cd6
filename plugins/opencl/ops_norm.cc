// Host side of rms_norm and add_rms_norm (kernels/norm.cl): one work-group
// of 64 items per row.
#include "cl_ops.h"

namespace tessera::opencl {
namespace {

constexpr size_t kNormGroup = 64;  // TSR_NORM_GROUP in norm.cl

}  // namespace

Status EnqueueRmsNorm(const OpCall& call, LaunchContext& ctx) {
  const TensorView &x = call.in[0], &w = call.in[1], &y = call.out[0];
  KernelArgs args;
  args.RowsTensor(x).Tensor(w).RowsTensor(y).Float(call.params.rms_norm.eps);
  return ctx.Enqueue(KernelName("rms_norm", x.dtype), args,
                     NdRange::Groups(static_cast<size_t>(x.rows()), kNormGroup));
}

Status EnqueueAddRmsNorm(const OpCall& call, LaunchContext& ctx) {
  const TensorView &x = call.in[0], &r = call.in[1], &w = call.in[2];
  const TensorView &y = call.out[0], &r_out = call.out[1];
  KernelArgs args;
  args.RowsTensor(x).RowsTensor(r).Tensor(w).RowsTensor(y).RowsTensor(r_out);
  args.Float(call.params.rms_norm.eps);
  return ctx.Enqueue(KernelName("add_rms_norm", x.dtype), args,
                     NdRange::Groups(static_cast<size_t>(x.rows()), kNormGroup));
}

}  // namespace tessera::opencl
