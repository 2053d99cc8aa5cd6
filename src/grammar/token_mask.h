// Token masks for constrained decoding: which token ids may come next so
// that the output stays a prefix of a sentence of the grammar.
//
// TokenVocabulary: each id's bytes as they appear in decoded text (built
// once per tokenizer): byte-level BPE tokens through the byte alphabet,
// <0xNN> byte-fallback tokens as their byte, others as the text they add
// after a plain token (so SentencePiece's leading-space marker counts).
// Special tokens have no bytes and are never allowed by a grammar; the
// stop ids (EOS, request stop ids) are allowed exactly when the grammar can
// end.
//
// ComputeTokenMask walks the ids in byte order, so tokens that share a
// prefix share its matching work, and a rejected prefix rejects all tokens
// below it without trying them. Thread-safety: TokenVocabulary is immutable
// (share it); the matcher is the caller's.
#ifndef TESSERA_GRAMMAR_TOKEN_MASK_H_
#define TESSERA_GRAMMAR_TOKEN_MASK_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "grammar/earley_matcher.h"
#include "tokenizer/tokenizer.h"

namespace tessera::grammar {

class TokenVocabulary {
 public:
  static std::shared_ptr<const TokenVocabulary> Build(
      const Tokenizer& tokenizer);
  // For tests: explicit bytes per id ("" = never allowed).
  static std::shared_ptr<const TokenVocabulary> FromBytes(
      std::vector<std::string> bytes);

  int32_t size() const { return static_cast<int32_t>(bytes_.size()); }
  const std::string& bytes(int32_t id) const {
    return bytes_[static_cast<size_t>(id)];
  }
  // Ids with bytes, sorted by their bytes.
  const std::vector<int32_t>& sorted() const { return sorted_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> sorted_;
};

// Fills `allowed` (size vocab.size(), 1 = allowed) for the matcher's
// current state; `stop_ids` are allowed when the grammar can end here.
// Returns how many ids are allowed. The matcher is left as it was.
int64_t ComputeTokenMask(GrammarMatcher& matcher, const TokenVocabulary& vocab,
                         std::span<const int32_t> stop_ids,
                         std::vector<uint8_t>* allowed);

}  // namespace tessera::grammar

#endif  // TESSERA_GRAMMAR_TOKEN_MASK_H_
