// The tokenizer.* metadata of a GGUF file, built from a Hugging Face
// tokenizer.json (+ tokenizer_config.json) the way llama.cpp's loader
// expects it.
//
// Two tokenizer families are recognised, both BPE models in tokenizer.json:
//   byte-level BPE (a ByteLevel pre-tokenizer or decoder; GPT-2, Qwen,
//     Llama 3, make-model's synthetic tokenizer) -> tokenizer.ggml.model
//     "gpt2": tokens (byte-level spelling, as in tokenizer.json), token_type
//     (added special -> CONTROL, other added -> USER_DEFINED, else NORMAL),
//     merges ("left right" strings in rank order) and tokenizer.ggml.pre,
//     chosen from the pre-tokenizer's Split regex: Qwen2's -> "qwen2",
//     Llama 3's -> "llama-bpe", ByteLevel's own GPT-2 regex -> "gpt-2",
//     anything else -> "default" (with a note: llama.cpp then splits text
//     with its default regexes, so text may tokenize differently; token ids
//     fed directly are unaffected).
//   SentencePiece-style BPE (byte_fallback, "<0xXX>" byte tokens, no
//     ByteLevel; Llama 2, stories260k) -> tokenizer.ggml.model "llama":
//     tokens (with the "▁" space marker), token_type (unk -> UNKNOWN, added
//     special -> CONTROL, <0xXX> -> BYTE, else NORMAL) and scores.
//     llama.cpp's SentencePiece tokenizer merges the adjacent pair whose
//     concatenation has the highest score, so a token made by merge rank r
//     (the first merge producing it) scores -r; tokens no merge produces
//     (single characters) score below every merge; control, byte and
//     unknown tokens score 0. add_space_prefix is true when the normalizer
//     prepends "▁".
// Both: ids without a token (holes, or config vocab_size beyond the
// tokenizer) become "[PAD<id>]" with type UNUSED, so the token list has
// exactly vocab_size entries (llama.cpp checks it against token_embd); a
// tokenizer id >= vocab_size is an error. bos/eos/unknown ids, add_bos /
// add_eos (tokenizer_config.json, else whether the post-processor adds the
// BOS token) and the chat template (tokenizer_config.json) are copied.
//
// Pure functions of the files, thread-safe.
#ifndef TESSERA_GGUF_GGUF_VOCAB_H_
#define TESSERA_GGUF_GGUF_VOCAB_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_writer.h"

namespace tessera::gguf {

struct VocabSummary {
  std::string model;               // "gpt2" or "llama"
  std::string pre;                 // tokenizer.ggml.pre ("" for "llama")
  int64_t num_tokens = 0;          // == vocab_size
  int64_t num_padding = 0;         // "[PAD<id>]" entries added
  int64_t num_merges = 0;          // "gpt2" only
  std::vector<std::string> notes;  // things a person should know
};

struct VocabOptions {
  int64_t vocab_size = 0;  // rows of the embedding table
  std::optional<int32_t> bos_token_id;
  std::optional<int32_t> eos_token_id;
};

// Reads `model_dir`/tokenizer.json (required) and tokenizer_config.json
// (optional) and sets the tokenizer.* keys on `writer`. NotFound without
// tokenizer.json, Unimplemented for a tokenizer of another kind (WordPiece,
// Unigram, ...), InvalidArgument for a malformed file (messages name it).
StatusOr<VocabSummary> AddTokenizerMetadata(const std::string& model_dir,
                                            const VocabOptions& options,
                                            GgufWriter& writer);

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_GGUF_VOCAB_H_
