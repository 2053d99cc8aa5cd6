#include "ops.h"

namespace tessera::cpu {

OpRunFn FindOpRun(tsr_op_id id) {
  switch (id) {
    case TSR_OP_EMBEDDING: return RunEmbedding;
    case TSR_OP_RMS_NORM: return RunRmsNorm;
    case TSR_OP_ADD_RMS_NORM: return RunAddRmsNorm;
    case TSR_OP_LINEAR: return RunLinear;
    case TSR_OP_ROPE: return RunRope;
    case TSR_OP_KV_STORE: return RunKvStore;
    case TSR_OP_PAGED_ATTENTION: return RunPagedAttention;
    case TSR_OP_SILU_AND_MUL: return RunSiluAndMul;
    case TSR_OP_ADD: return RunAdd;
    case TSR_OP_CAST: return RunCast;
    case TSR_OP_ARGMAX: return RunArgmax;
    case TSR_OP_SAMPLE: return RunSample;
    case TSR_OP_LOGPROBS: return RunLogprobs;
    default: return nullptr;
  }
}

}  // namespace tessera::cpu
