#include "cli/model_loading.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/logging.h"
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
                   "weight quantization: auto (int4 for a GGUF whose decoder "
                   "weights are Q4_0, w8a8_int8 for other quantized GGUFs, "
                   "else none); none; int8 (decoder "
                   "linear weights as int8, a scale per 32 inputs, "
                   "activations in floating point); int8-per-channel (a "
                   "scale per output row); w8a8_int8 (int8 weights and "
                   "activations, a scale per 32 of each, int8 dot products: "
                   "llama.cpp's Q8_0); w8a8_int8-per-channel (a scale per "
                   "weight row and per token: the fastest int8); int4 (alias "
                   "q4_0: 4-bit decoder weights with a scale per 32, int8 "
                   "activations: llama.cpp's Q4_0)")
      ->check(CLI::IsMember({"auto", "none", "int8", "int8-per-channel",
                             "w8a8_int8", "w8a8_int8-per-channel", "int4",
                             "q4_0"}))
      ->capture_default_str();
}

void ApplyQuantizationFlag(const std::string& value,
                           const model::Checkpoint& checkpoint,
                           model::ModelRunnerOptions* options) {
  const std::vector<std::string> quantized = checkpoint.QuantizedLinearTypes();
  std::string resolved = value;
  if (value == "auto") {
    resolved = quantized.empty() ? "none"
               : quantized == std::vector<std::string>{"q4_0"} ? "int4"
                                                               : "w8a8_int8";
  }
  if (resolved == "q4_0") resolved = "int4";
  const bool int4 = resolved == "int4";
  options->quantization = resolved == "none" ? model::WeightQuantization::kNone
                          : int4             ? model::WeightQuantization::kInt4
                                             : model::WeightQuantization::kInt8;
  options->int8_activations = int4 || resolved == "w8a8_int8" ||
                              resolved == "w8a8_int8-per-channel";
  options->int8_group_size = resolved == "int8-per-channel" ||
                                     resolved == "w8a8_int8-per-channel"
                                 ? 0
                                 : model::kDefaultInt8GroupSize;
  if (quantized.empty()) return;
  const std::string types = fmt::format("{}", fmt::join(quantized, ", "));
  if (resolved == "none") {
    TSR_LOG_WARN(
        "{}: decoder weights stored as {} are widened to the activation "
        "dtype at load (--quantization none): about 2 bytes per weight "
        "instead of under 1",
        checkpoint.dir(), types);
  } else if (int4 && quantized == std::vector<std::string>{"q4_0"}) {
    TSR_LOG_INFO("{}: q4_0 decoder weights load as 4-bit with a scale per 32 "
                 "(the same numbers), activations quantised per 32 as "
                 "llama.cpp does",
                 checkpoint.dir());
  } else if (int4) {
    TSR_LOG_WARN(
        "{}: decoder weights stored as {} are converted at load to 4-bit "
        "with a scale per 32 (Q4_0's format; --quantization w8a8_int8 keeps "
        "more of the file's precision at about twice the bytes)",
        checkpoint.dir(), types);
  } else if (quantized == std::vector<std::string>{"q8_0"} &&
             options->int8_group_size == model::kDefaultInt8GroupSize) {
    TSR_LOG_INFO("{}: q8_0 decoder weights load as int8 with a scale per 32 "
                 "(the same numbers){}",
                 checkpoint.dir(),
                 options->int8_activations
                     ? ", activations quantised per 32 as llama.cpp does "
                       "(w8a8_int8)"
                     : "");
  } else {
    TSR_LOG_WARN(
        "{}: decoder weights stored as {} are converted at load to int8 "
        "with a scale per {} (Tessera has no native kernel for them yet): "
        "about 1.1 bytes per weight, a rounding step on top of the file's",
        checkpoint.dir(), types,
        options->int8_group_size == 0 ? std::string("output row")
                                      : std::to_string(options->int8_group_size));
  }
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
