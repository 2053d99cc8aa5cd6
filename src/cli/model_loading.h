// Model-loading helpers shared by `generate`, `serve` and `bench`: the EOS
// ids a checkpoint and its tokenizer declare, the exit code for a failure
// while loading or running a model, and the --quantization flag.
#ifndef TESSERA_CLI_MODEL_LOADING_H_
#define TESSERA_CLI_MODEL_LOADING_H_

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "model/checkpoint.h"
#include "model/model_runner.h"
#include "tokenizer/tokenizer.h"

namespace tessera::cli {

// Any of the checkpoint's EOS ids and the tokenizer's eos token.
std::vector<int32_t> EosIds(const model::Checkpoint& checkpoint,
                            const Tokenizer& tokenizer);

// The checkpoint's fault (unsupported, malformed, mismatched) is bad input
// (kExitBadInput), anything else a runtime failure (kExitRuntimeFailure).
int ModelFailureCode(const Status& status);

// Adds `--quantization auto|none|int8|int8-per-channel|w8a8_int8|
// w8a8_int8-per-channel|int4|q4_0` to `app`,
// bound to `value` ("auto" by default): int8 makes the decoder layers'
// linear weights (and the head) int8 with a scale per 32 inputs at load
// (model/weights.h), run weight-only (linear v2: activations stay float);
// int8-per-channel uses one scale per output row; w8a8_int8 (SGLang's
// name) loads the same weights and also quantises activations per row and
// block of 32 inside the op (linear v3: int8 dot products, llama.cpp's
// Q8_0 computation); w8a8_int8-per-channel does the same with one scale
// per weight row and one per activation row (token) — SGLang's w8a8_int8
// scheme, whose int sums run over whole rows (the fastest int8 path, a
// little less accurate); int4 (alias q4_0) stores the decoder layers'
// weights 4-bit with a scale per 32 (Q4_0's numbers; a weight whose K is
// not a multiple of 32, and the head, stay int8) and runs them as linear
// v4 (w4a8, llama.cpp's Q4_0 x Q8_0); none keeps the checkpoint's float
// weights (widening a quantized GGUF's to the activation dtype); auto is
// int4 for a GGUF whose decoder weights are all Q4_0 (loaded with the same
// numbers), w8a8_int8 for another block-quantized GGUF (Q8_0 maps onto
// int8 exactly, 4-/5-/6-bit K-quants are re-quantized to it) and none
// otherwise.
CLI::Option* AddQuantizationOption(CLI::App* app, std::string* value);
// Sets options->quantization, int8_group_size and int8_activations from a
// validated
// --quantization value, resolving auto against `checkpoint` (and logging
// the conversion a quantized GGUF goes through).
void ApplyQuantizationFlag(const std::string& value,
                           const model::Checkpoint& checkpoint,
                           model::ModelRunnerOptions* options);

// Adds `--kv-cache-dtype auto|bf16|f32` (SGLang's and vLLM's flag;
// "auto" by default: the activation dtype) bound to `value`.
CLI::Option* AddKvCacheDtypeOption(CLI::App* app, std::string* value);
// Sets options->kv_cache_dtype from a validated --kv-cache-dtype value
// (unset for auto).
void ApplyKvCacheDtypeFlag(const std::string& value,
                           model::ModelRunnerOptions* options);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_MODEL_LOADING_H_
