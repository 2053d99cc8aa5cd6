#include "cl_ops.h"

namespace tessera::opencl {

ClOpFn FindClOp(tsr_op_id id) {
  switch (id) {
    case TSR_OP_EMBEDDING: return EnqueueEmbedding;
    case TSR_OP_RMS_NORM: return EnqueueRmsNorm;
    case TSR_OP_ADD_RMS_NORM: return EnqueueAddRmsNorm;
    case TSR_OP_LINEAR: return EnqueueLinear;
    case TSR_OP_ROPE: return EnqueueRope;
    case TSR_OP_KV_STORE: return EnqueueKvStore;
    case TSR_OP_PAGED_ATTENTION: return EnqueuePagedAttention;
    case TSR_OP_SILU_AND_MUL: return EnqueueSiluAndMul;
    case TSR_OP_ADD: return EnqueueAdd;
    case TSR_OP_CAST: return EnqueueCast;
    case TSR_OP_ARGMAX: return EnqueueArgmax;
    case TSR_OP_SAMPLE: return EnqueueSample;
    case TSR_OP_LOGPROBS: return EnqueueLogprobs;
    default: return nullptr;
  }
}

}  // namespace tessera::opencl
