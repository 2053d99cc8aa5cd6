// The tokenizer a GGUF file carries (tokenizer.ggml.* metadata), rebuilt as
// the Hugging Face files Tessera's tokenizer loads: tokenizer.json and
// tokenizer_config.json text. The inverse of gguf_vocab.h, for the two
// tokenizer models llama.cpp's llama/qwen2/qwen3 files use:
//
//   "gpt2" (byte-level BPE): tokens and merges as stored; the pre-tokenizer
//     comes from tokenizer.ggml.pre: "qwen2" (and "deepseek-r1-qwen") ->
//     Qwen2's split regex with an NFC normalizer, as Qwen's own
//     tokenizer.json; "llama-bpe" / "llama3" / "smaug-bpe" -> Llama 3's
//     regex with ignore_merges (a whole word in the vocabulary is one
//     token, as llama.cpp does for them); "gpt-2" -> ByteLevel's own regex.
//     Another pre-tokenizer is Unimplemented, naming it.
//   "llama" (SentencePiece BPE with byte fallback): merges are rebuilt
//     from the scores, because llama.cpp merges the adjacent pair whose
//     concatenation has the highest score: for each normal token, every
//     split into two vocabulary tokens is a merge, ranked by the token's
//     score (highest first; ties by token id, then by split position). The
//     normalizer replaces " " by "▁" and, when add_space_prefix (default
//     true), prepends "▁"; the decoder undoes both.
// Both: CONTROL and UNKNOWN tokens become special added tokens,
// USER_DEFINED ones non-special added tokens (neither is normalized),
// UNUSED ones ("[PAD<id>]" holes) stay plain vocabulary entries;
// tokenizer.ggml.bos_token_id / eos_token_id / unknown_token_id name the
// bos, eos and unk tokens; add_bos_token / add_eos_token (llama default:
// add BOS) become a TemplateProcessing post-processor and the config's
// add_*_token; tokenizer.chat_template is passed through.
//
// Errors (messages start with the path): Unimplemented for another
// tokenizer model (bert, t5, rwkv, ...) or pre-tokenizer, InvalidArgument
// for missing or inconsistent arrays (token_type / scores of another
// length, a special-token id outside the vocabulary).
//
// Pure function of the file, thread-safe.
#ifndef TESSERA_GGUF_GGUF_TOKENIZER_H_
#define TESSERA_GGUF_GGUF_TOKENIZER_H_

#include <optional>
#include <string>

#include "base/status.h"
#include "gguf/gguf_reader.h"

namespace tessera::gguf {

struct GgufTokenizerFiles {
  std::string tokenizer_json;
  std::string tokenizer_config_json;
  std::optional<std::string> chat_template;  // tokenizer.chat_template
  std::string model;                         // "gpt2" or "llama"
  std::string pre;                           // "gpt2" only
};

StatusOr<GgufTokenizerFiles> TokenizerFilesFromGguf(const GgufFile& file);

}  // namespace tessera::gguf

#endif  // TESSERA_GGUF_GGUF_TOKENIZER_H_
