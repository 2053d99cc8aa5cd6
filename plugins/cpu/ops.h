// The kernels of the cpu plugin, one Run (on the stream worker) per v1 op
// and per later op version the plugin lists (op_runs.cc);
// the synchronous checks are the kit's (kit/op_checks.h). Contracts:
// include/tessera/plugin/tessera_plugin.h. Families:
//   ops_norm.cc         rms_norm, add_rms_norm
//   ops_elementwise.cc  embedding, silu_and_mul, add, cast
//   ops_linear.cc       linear
//   ops_linear_w8.cc    linear v2 (int8 weights, ABI 1.1)
//   ops_linear_w8a8.cc  linear v3 (int8 weights and activations, ABI 1.5)
//                       and v4 (4-bit weights, int8 activations, ABI 1.6)
//   ops_attention.cc    rope, kv_store, paged_attention
//   ops_sampling.cc     argmax, sample, logprobs
//   ops_decoder_layer.cc  decoder_layer (fused: the v1 kernels in one item)
// Every kernel supports arbitrary (non-negative) strides, accumulates in f32
// or better, and splits its work across ctx.pool.
#ifndef TESSERA_PLUGINS_CPU_OPS_H_
#define TESSERA_PLUGINS_CPU_OPS_H_

#include "kit_names.h"
#include "stream.h"

namespace tessera::cpu {

// A kernel; failures become the stream's sticky error.
using OpRunFn = Status (*)(const OpCall& call, ExecContext& ctx);

// The kernel of the op version `def` describes (NULL for one the op table
// does not list).
OpRunFn FindOpRun(const OpDef& def);
OpRunFn FindOpRun(tsr_op_id op, uint32_t version);

#define TSR_CPU_DECLARE_OP(Name) Status Run##Name(const OpCall& call, ExecContext& ctx);

TSR_CPU_DECLARE_OP(Embedding)
TSR_CPU_DECLARE_OP(RmsNorm)
TSR_CPU_DECLARE_OP(AddRmsNorm)
TSR_CPU_DECLARE_OP(Linear)
TSR_CPU_DECLARE_OP(Rope)
TSR_CPU_DECLARE_OP(KvStore)
TSR_CPU_DECLARE_OP(PagedAttention)
TSR_CPU_DECLARE_OP(SiluAndMul)
TSR_CPU_DECLARE_OP(Add)
TSR_CPU_DECLARE_OP(Cast)
TSR_CPU_DECLARE_OP(Argmax)
TSR_CPU_DECLARE_OP(Sample)
TSR_CPU_DECLARE_OP(Logprobs)
TSR_CPU_DECLARE_OP(LinearW8)  // linear v2 (ops_linear_w8.cc)
TSR_CPU_DECLARE_OP(LinearW8A8)  // linear v3 and v4 (ops_linear_w8a8.cc)
TSR_CPU_DECLARE_OP(EmbeddingShard)  // embedding v2 (ops_elementwise.cc)
TSR_CPU_DECLARE_OP(DecoderLayer)  // fused, v1-v3 (ops_decoder_layer.cc)

#undef TSR_CPU_DECLARE_OP

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPS_H_
