// Host side of embedding, silu_and_mul, add and cast (kernels/elementwise.cl).
#include "cl_ops.h"

namespace tessera::opencl {

Status EnqueueEmbedding(const OpCall& call, LaunchContext& ctx) {
  const TensorView &ids = call.in[0], &table = call.in[1], &y = call.out[0];
  KernelArgs args;
  args.Tensor(ids).Tensor(table).Tensor(y);
  return ctx.Enqueue(KernelName("embedding", table.dtype), args,
                     NdRange::Grid2(static_cast<size_t>(table.dim(1)),
                                    static_cast<size_t>(ids.dim(0))));
}

Status EnqueueSiluAndMul(const OpCall& call, LaunchContext& ctx) {
  const TensorView &x = call.in[0], &y = call.out[0];
  KernelArgs args;
  args.RowsTensor(x).RowsTensor(y);
  return ctx.Enqueue(KernelName("silu_and_mul", x.dtype), args,
                     NdRange::Grid2(static_cast<size_t>(y.cols()),
                                    static_cast<size_t>(y.rows())));
}

Status EnqueueAdd(const OpCall& call, LaunchContext& ctx) {
  const TensorView &a = call.in[0], &b = call.in[1], &y = call.out[0];
  KernelArgs args;
  args.FlatTensor(a).FlatTensor(b).FlatTensor(y);
  return ctx.Enqueue(KernelName("add", a.dtype), args,
                     NdRange::Linear(static_cast<size_t>(y.numel())));
}

Status EnqueueCast(const OpCall& call, LaunchContext& ctx) {
  const TensorView &x = call.in[0], &y = call.out[0];
  KernelArgs args;
  args.FlatTensor(x).FlatTensor(y);
  return ctx.Enqueue(StrCat("cast_", DTypeSuffix(x.dtype), "_", DTypeSuffix(y.dtype)), args,
                     NdRange::Linear(static_cast<size_t>(y.numel())));
}

}  // namespace tessera::opencl
