// The BPE model of a tokenizer.json: one pre-token word -> token ids.
//
// Covers both BPE styles Hugging Face serialises:
//  - byte-level (GPT-2, Llama 3, Qwen): words arrive already mapped to the
//    byte-level alphabet, so every character is in the vocabulary;
//  - SentencePiece-like (Llama 2, TinyLlama): characters missing from the
//    vocabulary become <0xAB> byte tokens (byte_fallback) or the unk token
//    (consecutive unknowns fused into one when fuse_unk).
// Merges may be "a b" strings or ["a", "b"] pairs; a lower index is a higher
// priority. With ignore_merges a word found whole in the vocabulary is
// emitted as that one token (Llama 3).
//
// Merging is O(n log n) in the word's length: a min-heap of candidate merges
// over a linked list of symbols, with entries checked for staleness when
// popped. So one 10,000-token word (a tokenizer with no pre-tokenizer) is
// cheap. Results for words up to WordCache::kMaxWordBytes are cached.
//
// Immutable after FromJson except for the internally synchronised cache:
// Tokenize may run on many threads at once.
#ifndef TESSERA_TOKENIZER_BPE_MODEL_H_
#define TESSERA_TOKENIZER_BPE_MODEL_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/json_util.h"
#include "tokenizer/word_cache.h"

namespace tessera::tok {

// Largest token id accepted from a file (guards against absurd allocations).
inline constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

class BpeModel {
 public:
  // `model` is the "model" object of tokenizer.json (type BPE).
  static StatusOr<std::unique_ptr<BpeModel>> FromJson(const Json& model,
                                                      std::string_view where);

  // Appends the ids of one pre-token `word` (valid UTF-8) to `ids`.
  void Tokenize(std::string_view word, std::vector<int32_t>* ids) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // The token text, or nullptr when `id` is not in the vocabulary.
  const std::string* IdToToken(int32_t id) const;
  // One past the largest id in the vocabulary.
  int32_t id_limit() const { return static_cast<int32_t>(id_to_token_.size()); }
  std::optional<int32_t> unk_id() const { return unk_id_; }

  const WordCache& cache() const { return cache_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>()(s);
    }
  };
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };

  BpeModel() : cache_(16384) {}
  Status ParseMerges(const Json& merges, std::string_view where);
  const Merge* FindMerge(int32_t left, int32_t right) const;
  // Splits `word` into initial symbols and merges them; appends the ids.
  void MergeWord(std::string_view word, std::vector<int32_t>* ids) const;

  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> id_present_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left << 32 | right)
  std::optional<int32_t> unk_id_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::array<int32_t, 256> byte_ids_;  // <0xAB> token ids, -1 when absent
  WordCache cache_;
};

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_BPE_MODEL_H_
