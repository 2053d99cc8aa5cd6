// OpCall: one launch of an op (v1, a later version or a fused op a plugin
// lists), validated and copied by the launch entry —
// the argument views and the op's params — which is what an op's check and
// its kernel read. Plain value type.
#ifndef TESSERA_PLUGINS_KIT_OP_CALL_H_
#define TESSERA_PLUGINS_KIT_OP_CALL_H_

#include <cstddef>

#include "tensor.h"

namespace tessera::plugin_kit {

// The most tensors one launch passes: TSR_MAX_OP_ARGS for a v1 op (at most
// 3 outputs), more for a fused op (decoder_layer: 21 inputs, 3 outputs).
inline constexpr size_t kMaxCallInputs = 24;
inline constexpr size_t kMaxCallOutputs = 4;

struct OpCall {
  tsr_op_id op = 0;
  uint32_t version = 1;
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  // An absent optional argument of a fused op has dtype TSR_DTYPE_INVALID.
  TensorView in[kMaxCallInputs];
  TensorView out[kMaxCallOutputs];
  union Params {
    tsr_rms_norm_params rms_norm;
    tsr_rope_params rope;
    tsr_paged_attention_params attention;
    tsr_linear_w8_params linear_w8;  // linear v2
    tsr_decoder_layer_params decoder_layer;  // fused, ABI 1.2
    tsr_embedding_shard_params embedding_shard;  // embedding v2, ABI 1.4
  } params{};
};

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_OP_CALL_H_
