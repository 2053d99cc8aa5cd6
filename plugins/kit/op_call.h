// OpCall: one launch of an op (v1, or a later version a plugin lists), validated and copied by the launch entry —
// the argument views and the op's params — which is what an op's check and
// its kernel read. Plain value type.
#ifndef TESSERA_PLUGINS_KIT_OP_CALL_H_
#define TESSERA_PLUGINS_KIT_OP_CALL_H_

#include <cstddef>

#include "tensor.h"

namespace tessera::plugin_kit {

struct OpCall {
  tsr_op_id op = 0;
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  TensorView in[TSR_MAX_OP_ARGS];
  TensorView out[TSR_MAX_OP_ARGS];
  union Params {
    tsr_rms_norm_params rms_norm;
    tsr_rope_params rope;
    tsr_paged_attention_params attention;
    tsr_linear_w8_params linear_w8;  // linear v2
  } params{};
};

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_OP_CALL_H_
