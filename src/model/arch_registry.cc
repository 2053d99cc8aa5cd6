#include "model/arch_registry.h"

#include <fmt/format.h>

namespace tessera::model {

std::span<const ArchitectureSpec* const> RegisteredArchitectures() {
  static const ArchitectureSpec* const kAll[] = {
      &LlamaArchitecture(), &Qwen2Architecture(), &Qwen3Architecture()};
  return kAll;
}

StatusOr<const ArchitectureSpec*> FindArchitecture(Architecture arch) {
  for (const ArchitectureSpec* spec : RegisteredArchitectures()) {
    if (spec->id == arch) return spec;
  }
  std::string names;
  for (const ArchitectureSpec* spec : RegisteredArchitectures()) {
    if (!names.empty()) names += ", ";
    names += spec->class_name;
  }
  return UnimplementedError(fmt::format(
      "architecture {} has no forward pass in the model catalog; supported: "
      "{}",
      ArchitectureClassName(arch), names));
}

StatusOr<const ArchitectureSpec*> ArchitectureForConfig(
    const ModelConfig& config) {
  TSR_ASSIGN_OR_RETURN(const ArchitectureSpec* spec,
                       FindArchitecture(config.architecture));
  // The checkpoint's expected tensors come from ModelConfig's own rules;
  // the catalog must read exactly those.
  if (spec->HasQkvBias(config) != config.has_qkv_bias() ||
      spec->HasOBias(config) != config.has_o_bias() ||
      spec->qk_norm != config.has_qk_norm()) {
    return InternalError(fmt::format(
        "the model catalog's {} disagrees with its config about biases or "
        "q/k norm (qkv bias {}/{}, o bias {}/{}, qk norm {}/{})",
        spec->class_name, spec->HasQkvBias(config), config.has_qkv_bias(),
        spec->HasOBias(config), config.has_o_bias(), spec->qk_norm,
        config.has_qk_norm()));
  }
  return spec;
}

}  // namespace tessera::model
