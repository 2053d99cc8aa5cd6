// Qwen2ForCausalLM (Qwen2, Qwen2.5): Llama's layer with biases on q/k/v
// (config.attention_bias, which Qwen2's config defaults to true) and never
// on o_proj.
#include "model/arch_registry.h"

namespace tessera::model {

const ArchitectureSpec& Qwen2Architecture() {
  static const ArchitectureSpec kSpec{
      .id = Architecture::kQwen2,
      .class_name = "Qwen2ForCausalLM",
      .qkv_bias = BiasRule::kFromConfig,
      .o_bias = BiasRule::kNever,
      .qk_norm = false,
      .rope_style = TSR_ROPE_NEOX,
  };
  return kSpec;
}

}  // namespace tessera::model
