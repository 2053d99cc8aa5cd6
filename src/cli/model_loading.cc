#include "cli/model_loading.h"

#include <algorithm>

#include "cli/cli_io.h"
#include "prompt/prompt_tools.h"

namespace tessera::cli {

std::vector<int32_t> EosIds(const model::Checkpoint& checkpoint,
                            const Tokenizer& tokenizer) {
  std::vector<int32_t> ids = checkpoint.EosTokenIds();
  if (auto eos = tokenizer.eos_id();
      eos && std::find(ids.begin(), ids.end(), *eos) == ids.end()) {
    ids.push_back(*eos);
  }
  return ids;
}

int ModelFailureCode(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kUnimplemented:
      return kExitBadInput;
    default:
      return kExitRuntimeFailure;
  }
}

CLI::Option* AddQuantizationOption(CLI::App* app, std::string* value) {
  return app
      ->add_option("--quantization", *value,
                   "weight quantization: none; int8 (decoder linear weights "
                   "as int8, a scale per 32 inputs); int8-per-channel (a "
                   "scale per output row)")
      ->check(CLI::IsMember({"none", "int8", "int8-per-channel"}))
      ->capture_default_str();
}

void ApplyQuantizationFlag(const std::string& value,
                           model::ModelRunnerOptions* options) {
  options->quantization = value == "none" ? model::WeightQuantization::kNone
                                          : model::WeightQuantization::kInt8;
  options->int8_group_size =
      value == "int8-per-channel" ? 0 : model::kDefaultInt8GroupSize;
}

CLI::Option* AddKvCacheDtypeOption(CLI::App* app, std::string* value) {
  return app
      ->add_option("--kv-cache-dtype", *value,
                   "KV cache dtype: auto (the activation dtype), bf16 or "
                   "f32; bf16 halves the KV memory of an f32 model")
      ->check(CLI::IsMember({"auto", "bf16", "f32"}))
      ->capture_default_str();
}

void ApplyKvCacheDtypeFlag(const std::string& value,
                           model::ModelRunnerOptions* options) {
  if (value == "bf16") options->kv_cache_dtype = TSR_DTYPE_BF16;
  if (value == "f32") options->kv_cache_dtype = TSR_DTYPE_F32;
}

}  // namespace tessera::cli
