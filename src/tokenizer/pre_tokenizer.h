// The pre-tokenizer stage of a tokenizer.json: one normalized stretch of text
// (between added tokens) -> the words ("pre-tokens") the BPE model merges
// independently.
//
// Supported types:
//   Split      {pattern: {String|Regex}, behavior, invert}; regexes run on
//              PCRE2 (UTF + UCP), behaviours Removed, Isolated,
//              MergedWithPrevious, MergedWithNext, Contiguous.
//   ByteLevel  {add_prefix_space, use_regex}: optional GPT-2 split, then each
//              byte becomes its byte-level alphabet character.
//   Metaspace  {replacement, prepend_scheme always|first|never (or the older
//              add_prefix_space), split}.
//   Sequence   {pretokenizers: [...]}.
// Others fail to load with an Unimplemented error naming the type. Empty
// words are dropped, as Hugging Face does. Immutable after FromJson;
// thread-safe. Input must be valid UTF-8.
#ifndef TESSERA_TOKENIZER_PRE_TOKENIZER_H_
#define TESSERA_TOKENIZER_PRE_TOKENIZER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace tessera::tok {

// How a Split treats the delimiters (the pattern's matches).
enum class SplitBehavior {
  kRemoved,
  kIsolated,
  kMergedWithPrevious,
  kMergedWithNext,
  kContiguous
};

// Cuts [0, size) into pieces given the delimiter ranges (sorted, disjoint),
// following Hugging Face's Split semantics; `invert` swaps the roles of
// delimiters and the text between them. Empty pieces are omitted.
std::vector<std::pair<size_t, size_t>> SplitByMatches(
    size_t size, const std::vector<std::pair<size_t, size_t>>& delimiters,
    SplitBehavior behavior, bool invert);

class PreTokenizer {
 public:
  // `config` is the "pre_tokenizer" object; `where` its JSON path.
  static StatusOr<std::unique_ptr<PreTokenizer>> FromJson(
      const Json& config, std::string_view where);

  // Appends the words of `text`. `at_origin` says the text begins at the
  // first byte of the input (Metaspace's prepend_scheme "first" only
  // prepends there).
  void PreTokenize(std::string_view text, bool at_origin,
                   std::vector<std::string>* words) const;

 private:
  enum class Kind { kSplit, kByteLevel, kMetaspace };
  enum class Prepend { kAlways, kFirst, kNever };
  struct Step {
    Kind kind;
    // Split
    std::unique_ptr<Regex> regex;  // null for a String pattern
    std::string literal;
    SplitBehavior behavior = SplitBehavior::kIsolated;
    bool invert = false;
    // ByteLevel
    bool add_prefix_space = false;
    bool use_regex = false;
    // Metaspace
    std::string replacement;
    Prepend prepend = Prepend::kAlways;
    bool split = true;
  };
  struct Piece {
    std::string text;
    bool at_origin;
  };

  static Status Parse(const Json& config, std::string_view where,
                      std::vector<Step>* steps);
  void ApplyStep(const Step& step, Piece piece, std::vector<Piece>* out) const;

  std::vector<Step> steps_;
  std::unique_ptr<Regex> gpt2_regex_;  // compiled when a ByteLevel uses it
};

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_PRE_TOKENIZER_H_
