// Tokenizer: a Hugging Face tokenizer.json BPE tokenizer (text <-> token ids).
//
// Start here for src/tokenizer/. Encode runs the Hugging Face pipeline:
//   1. added tokens (special tokens such as <|im_start|>) are cut out of the
//      raw text, longest match first (AddedTokenMatcher);
//   2. each stretch between them is normalized (Normalizer), then tokens
//      marked `normalized` are cut out of the normalized text;
//   3. the pre-tokenizer splits a stretch into words (PreTokenizer);
//   4. the BPE model turns each word into ids (BpeModel);
//   5. with add_special_tokens, the post-processor adds BOS/EOS
//      (PostProcessor).
// Decode maps ids to token strings (added tokens included, unknown ids
// skipped, special tokens skipped on request) and runs the decoder
// (Decoder); IncrementalDetokenizer streams the same decoder.
//
// Both BPE styles are covered: byte-level (GPT-2, Llama 3, Qwen) and
// SentencePiece-like with byte fallback (Llama 2, TinyLlama). Encode accepts
// any bytes: invalid UTF-8 in the input is first replaced by U+FFFD.
//
// As in Hugging Face, an added token whose content is also in the BPE
// vocabulary takes the vocabulary's id, and an added token marked
// `normalized` is matched and decoded in its normalized form.
//
// Load reads tokenizer_config.json when present for bos_token / eos_token,
// add_bos_token / add_eos_token (used when the post-processor adds nothing)
// and added_tokens_decoder entries missing from tokenizer.json. Its
// clean_up_tokenization_spaces is not applied (a warning is logged if true).
//
// Errors (Load): NotFound for a missing path; InvalidArgument for malformed
// or truncated JSON, a missing or mistyped field, or inconsistent data (a
// merge naming a token not in the vocabulary); Unimplemented for a
// component Tessera does not support (the message names it and its JSON
// path, e.g. "model.type \"Unigram\""). Messages start with the file path.
//
// Thread-safety: a loaded Tokenizer is immutable apart from an internally
// synchronised word cache, so Encode, Decode and the lookups may be called
// from any number of threads at once.
#ifndef TESSERA_TOKENIZER_TOKENIZER_H_
#define TESSERA_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"

namespace tessera {

class Tokenizer {
 public:
  // `path` is a directory holding tokenizer.json (and optionally
  // tokenizer_config.json), or a tokenizer.json file (a
  // tokenizer_config.json beside it is read when present).
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path);

  // From JSON texts in memory; `config_json` may be empty (no
  // tokenizer_config.json). `source` names the data in error messages.
  static StatusOr<std::unique_ptr<Tokenizer>> FromJsonText(
      std::string_view tokenizer_json, std::string_view config_json,
      std::string_view source);

  std::vector<int32_t> Encode(std::string_view text,
                              bool add_special_tokens) const;

  // Ids outside the vocabulary are skipped. With skip_special_tokens, added
  // tokens marked special are left out (added tokens that are not special,
  // such as Qwen3's <think>, stay).
  std::string Decode(std::span<const int32_t> ids,
                     bool skip_special_tokens) const;

  // One past the largest id of the vocabulary and added tokens.
  int32_t vocab_size() const { return vocab_size_; }
  std::optional<int32_t> bos_id() const { return bos_id_; }
  std::optional<int32_t> eos_id() const { return eos_id_; }
  // The texts of bos/eos as tokenizer_config.json names them (chat templates
  // use them), empty when not set.
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }

  // An upper bound on the input bytes one token of Encode's output covers:
  // a text of B bytes encodes to at least B / max_input_bytes_per_token()
  // tokens. Lets a server refuse a prompt that cannot fit the context
  // before spending the time to tokenize it.
  size_t max_input_bytes_per_token() const {
    return max_input_bytes_per_token_;
  }

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // The token's string as stored in the vocabulary (for byte-level BPE that
  // is the byte-level alphabet, e.g. "Ġhello"; for an added token marked
  // `normalized`, its normalized content), nullopt for an unknown id.
  std::optional<std::string_view> IdToToken(int32_t id) const;
  // True for added tokens marked "special": true.
  bool IsSpecial(int32_t id) const;
  const std::vector<tok::AddedToken>& added_tokens() const {
    return added_tokens_;
  }

  // For IncrementalDetokenizer.
  const tok::Decoder& decoder() const { return *decoder_; }

  // For tests and diagnostics: words currently in the BPE word cache.
  size_t cached_words() const { return model_->cache().size(); }

 private:
  Tokenizer() = default;
  // Encodes one stretch of raw text between added tokens.
  void EncodeStretch(std::string_view text, bool at_origin,
                     std::vector<int32_t>* ids) const;
  Status Finalize();  // builds matchers, vocab size, bos/eos ids

  std::unique_ptr<tok::Normalizer> normalizer_;       // may be null
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer_;  // may be null
  std::unique_ptr<tok::BpeModel> model_;
  std::unique_ptr<tok::PostProcessor> post_processor_;
  std::unique_ptr<tok::Decoder> decoder_;

  std::vector<tok::AddedToken> added_tokens_;
  std::unordered_map<int32_t, size_t> added_by_id_;  // id -> index
  // What IdToToken gives for added_tokens_[i]: the content, normalized for
  // a `normalized` token.
  std::vector<std::string> added_text_;
  std::unordered_map<std::string, int32_t> added_by_content_;
  tok::AddedTokenMatcher raw_matcher_;         // normalized == false
  tok::AddedTokenMatcher normalized_matcher_;  // normalized == true

  int32_t vocab_size_ = 0;
  size_t max_input_bytes_per_token_ = 4;
  std::string bos_token_, eos_token_;
  std::optional<int32_t> bos_id_, eos_id_;
  bool add_bos_ = false, add_eos_ = false;  // tokenizer_config.json

  friend class TokenizerLoader;
};

}  // namespace tessera

#endif  // TESSERA_TOKENIZER_TOKENIZER_H_
