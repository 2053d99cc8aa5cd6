// The model catalog: one ArchitectureSpec per supported decoder-only
// architecture, saying how it differs from the shared forward pass.
//
// Every architecture here runs the same layer (model_runner.h): pre-norm
// RMSNorm, fused q/k/v projection, rotary embedding, paged GQA attention,
// o projection, RMSNorm, SwiGLU MLP. The spec names what varies:
//   - which attention projections carry a bias (never, always, or as the
//     config's attention_bias says);
//   - whether q and k are RMS-normalised per head before rope (Qwen3);
//   - the rope pairing (all three use Hugging Face's rotate-half, i.e. neox).
// Each architecture lives in its own small file (arch_llama.cc,
// arch_qwen2.cc, arch_qwen3.cc); adding one means adding a file and a line
// in arch_registry.cc.
//
// Thread-safety: specs are immutable statics.
#ifndef TESSERA_MODEL_ARCH_REGISTRY_H_
#define TESSERA_MODEL_ARCH_REGISTRY_H_

#include <span>
#include <string_view>

#include "base/status.h"
#include "model/model_config.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::model {

enum class BiasRule {
  kNever,       // no bias, whatever the config says
  kFromConfig,  // config.attention_bias
};

struct ArchitectureSpec {
  Architecture id;
  std::string_view class_name;  // "Qwen3ForCausalLM"
  BiasRule qkv_bias;            // q_proj, k_proj, v_proj
  BiasRule o_bias;              // o_proj
  bool qk_norm;                 // q_norm / k_norm [D] per head, before rope
  tsr_rope_style rope_style;

  bool HasQkvBias(const ModelConfig& c) const {
    return qkv_bias == BiasRule::kFromConfig && c.attention_bias;
  }
  bool HasOBias(const ModelConfig& c) const {
    return o_bias == BiasRule::kFromConfig && c.attention_bias;
  }
};

// Defined in the per-architecture files.
const ArchitectureSpec& LlamaArchitecture();
const ArchitectureSpec& Qwen2Architecture();
const ArchitectureSpec& Qwen3Architecture();

// Every registered architecture.
std::span<const ArchitectureSpec* const> RegisteredArchitectures();

// The spec of `arch`; Unimplemented naming the supported ones otherwise.
StatusOr<const ArchitectureSpec*> FindArchitecture(Architecture arch);

// FindArchitecture(config.architecture), then checks that the spec agrees
// with the tensors the config implies (weight_spec.h): biases and q/k norm.
StatusOr<const ArchitectureSpec*> ArchitectureForConfig(
    const ModelConfig& config);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_ARCH_REGISTRY_H_
