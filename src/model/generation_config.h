// GenerationConfig: the sampling defaults a checkpoint recommends, from its
// optional generation_config.json.
//
// Every field has Hugging Face's GenerationConfig default when the key (or
// the whole file) is absent; `present` records which keys the file set, so
// the engine can apply only what the model asked for:
//   do_sample false, temperature 1.0, top_p 1.0, top_k 50,
//   min_p 0 (disabled; Hugging Face's None), repetition_penalty 1.0,
//   max_new_tokens 0 (unset; Hugging Face's None), eos_token_ids [],
//   bos_token_id / pad_token_id unset.
// eos_token_id may be an int or a list in the file. Unknown keys are
// ignored. Errors: InvalidArgument for malformed JSON or a mistyped or
// out-of-range value (temperature < 0, top_p outside (0, 1], min_p outside
// [0, 1], top_k < 0, repetition_penalty <= 0), messages starting with the
// source path.
//
// Thread-safety: plain value type.
#ifndef TESSERA_MODEL_GENERATION_CONFIG_H_
#define TESSERA_MODEL_GENERATION_CONFIG_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::model {

struct GenerationConfig {
  bool do_sample = false;
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 50;  // 0 disables
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  int64_t max_new_tokens = 0;  // 0: not set
  std::vector<int32_t> eos_token_ids;
  std::optional<int32_t> bos_token_id;
  std::optional<int32_t> pad_token_id;

  // Keys the file set (non-null), e.g. "temperature".
  std::set<std::string> present;
  bool Has(std::string_view key) const {
    return present.count(std::string(key)) != 0;
  }
};

// Parses generation_config.json text; `source` starts every error.
StatusOr<GenerationConfig> ParseGenerationConfig(std::string_view json_text,
                                                 std::string_view source);
// Reads `path`; an absent file gives the defaults (not an error).
StatusOr<GenerationConfig> LoadGenerationConfig(const std::string& path);

// generation_config.json text holding exactly the keys in config.present.
std::string GenerationConfigToJson(const GenerationConfig& config);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_GENERATION_CONFIG_H_
