// The host side of the OpenCL plugin's ops: one Enqueue<Op> per v1 op,
// which picks the kernels for the call's dtypes and enqueues them (the
// kit's Check<Op> already validated shapes and params). Families:
//   ops_elementwise.cc / kernels/elementwise.cl  embedding, silu_and_mul, add, cast
//   ops_norm.cc / kernels/norm.cl                rms_norm, add_rms_norm
//   ops_linear.cc / kernels/linear.cl            linear
//   ops_attention.cc / kernels/attention.cl      rope, kv_store, paged_attention
//   ops_sampling.cc / kernels/sampling.cl        argmax, sample, logprobs
// Every kernel honours arbitrary (non-negative) strides and accumulates in
// f32 or better.
#ifndef TESSERA_PLUGINS_OPENCL_CL_OPS_H_
#define TESSERA_PLUGINS_OPENCL_CL_OPS_H_

#include "cl_launch.h"

namespace tessera::opencl {

using ClOpFn = Status (*)(const OpCall& call, LaunchContext& ctx);

// The host side of v1 op `id` (NULL for an id the op table does not list).
ClOpFn FindClOp(tsr_op_id id);

#define TSR_CL_DECLARE_OP(Name) Status Enqueue##Name(const OpCall& call, LaunchContext& ctx);
TSR_CL_DECLARE_OP(Embedding)
TSR_CL_DECLARE_OP(RmsNorm)
TSR_CL_DECLARE_OP(AddRmsNorm)
TSR_CL_DECLARE_OP(Linear)
TSR_CL_DECLARE_OP(Rope)
TSR_CL_DECLARE_OP(KvStore)
TSR_CL_DECLARE_OP(PagedAttention)
TSR_CL_DECLARE_OP(SiluAndMul)
TSR_CL_DECLARE_OP(Add)
TSR_CL_DECLARE_OP(Cast)
TSR_CL_DECLARE_OP(Argmax)
TSR_CL_DECLARE_OP(Sample)
TSR_CL_DECLARE_OP(Logprobs)
#undef TSR_CL_DECLARE_OP

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_CL_OPS_H_
