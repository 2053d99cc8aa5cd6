// Qwen3ForCausalLM (dense Qwen3): Llama's layer plus an RMSNorm of every q
// and k head (weights q_norm/k_norm [head_dim], the model's rms_norm_eps)
// between the projection and rope. Biases only when config.attention_bias
// (false in every released Qwen3).
#include "model/arch_registry.h"

namespace tessera::model {

const ArchitectureSpec& Qwen3Architecture() {
  static const ArchitectureSpec kSpec{
      .id = Architecture::kQwen3,
      .class_name = "Qwen3ForCausalLM",
      .qkv_bias = BiasRule::kFromConfig,
      .o_bias = BiasRule::kFromConfig,
      .qk_norm = true,
      .rope_style = TSR_ROPE_NEOX,
  };
  return kSpec;
}

}  // namespace tessera::model
