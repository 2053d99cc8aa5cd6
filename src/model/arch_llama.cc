// LlamaForCausalLM (Llama 2/3, TinyLlama, stories*): the plain layer. Biases
// on q/k/v and o only when config.attention_bias; no q/k norm; rotate-half
// rope (default or llama3 scaling, computed on the host by rope.h).
#include "model/arch_registry.h"

namespace tessera::model {

const ArchitectureSpec& LlamaArchitecture() {
  static const ArchitectureSpec kSpec{
      .id = Architecture::kLlama,
      .class_name = "LlamaForCausalLM",
      .qkv_bias = BiasRule::kFromConfig,
      .o_bias = BiasRule::kFromConfig,
      .qk_norm = false,
      .rope_style = TSR_ROPE_NEOX,
  };
  return kSpec;
}

}  // namespace tessera::model
