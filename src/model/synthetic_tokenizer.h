// A byte-level BPE tokenizer that make-model generates for its random
// checkpoints, written as Hugging Face tokenizer.json and
// tokenizer_config.json.
//
// Shape of what is generated (deterministic: the same vocab_size always
// gives the same bytes):
//   ids [0, 256)            one token per byte b, id == b, spelled in the
//                           GPT-2 byte-level alphabet;
//   ids [256, V - 3)        one token per merge, in merge order:
//                           first merges learned greedily (most frequent
//                           adjacent pair, ties to the smaller id pair) from
//                           BpeSampleText() for as long as a pair occurs at
//                           least twice, then synthetic merges (an existing
//                           token + one letter, breadth first) until the
//                           vocabulary is full;
//   ids V-3, V-2, V-1       <|endoftext|>, <|im_start|>, <|im_end|>: added
//                           special tokens.
// So the tokenizer has exactly V ids and every id decodes to bytes. The
// pipeline is Qwen's: no normalizer, a Split pre-tokenizer with a Qwen-style
// regex (Isolated) then ByteLevel (no prefix space, no regex), ByteLevel
// decoder. Any UTF-8 text round-trips through encode/decode.
// tokenizer_config.json: eos <|im_end|>, pad <|endoftext|>, no BOS, a ChatML
// chat_template.
//
// Pure functions, thread-safe.
#ifndef TESSERA_MODEL_SYNTHETIC_TOKENIZER_H_
#define TESSERA_MODEL_SYNTHETIC_TOKENIZER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera::model {

// The smallest vocabulary: 256 byte tokens plus the three special tokens.
inline constexpr int64_t kMinSyntheticVocabSize = 259;

struct SyntheticTokenizer {
  std::string tokenizer_json;         // tokenizer.json text
  std::string tokenizer_config_json;  // tokenizer_config.json text
  int32_t endoftext_id = 0;           // V - 3
  int32_t im_start_id = 0;            // V - 2
  int32_t im_end_id = 0;              // V - 1 (eos)
  int64_t learned_merges = 0;         // from the sample text
  int64_t synthetic_merges = 0;       // fill
};

// Generates the tokenizer for `vocab_size` ids (>= kMinSyntheticVocabSize,
// InvalidArgument otherwise). `model_max_length` goes to
// tokenizer_config.json.
StatusOr<SyntheticTokenizer> MakeSyntheticTokenizer(int64_t vocab_size,
                                                    int64_t model_max_length);

// The ChatML template written into tokenizer_config.json:
// "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
// "<|im_start|>assistant\n" when add_generation_prompt.
std::string_view ChatMlTemplate();

// The built-in English text the first merges are learned from.
std::string_view BpeSampleText();

}  // namespace tessera::model

#endif  // TESSERA_MODEL_SYNTHETIC_TOKENIZER_H_
