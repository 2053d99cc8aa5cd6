// A compiled PCRE2 regular expression over UTF-8 text, used by the Split
// pre-tokenizer and by Replace normalizers/decoders with a Regex pattern.
//
// Compiled with PCRE2_UTF | PCRE2_UCP, so \p{L}, \s, \w and (?i:...) follow
// Unicode as Oniguruma does for Hugging Face; JIT-compiled when the platform
// allows. Immutable after Compile: FindAll may run on many threads at once
// (each call owns its match data). Input must be valid UTF-8.
#ifndef TESSERA_TOKENIZER_REGEX_H_
#define TESSERA_TOKENIZER_REGEX_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tessera::tok {

class Regex {
 public:
  // A pattern in PCRE2 syntax; the error names the offset of the problem.
  static StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern);
  // A pattern matching `literal` exactly.
  static StatusOr<std::unique_ptr<Regex>> CompileLiteral(
      std::string_view literal);

  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Byte ranges [begin, end) of the non-overlapping matches, left to right.
  // Empty matches are skipped.
  std::vector<std::pair<size_t, size_t>> FindAll(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(void* code, bool jit, std::string pattern)
      : code_(code), jit_(jit), pattern_(std::move(pattern)) {}

  void* code_;  // pcre2_code_8*
  bool jit_;
  std::string pattern_;
};

// Replaces every match of `regex` in `text` with `content`.
std::string RegexReplaceAll(const Regex& regex, std::string_view text,
                            std::string_view content);

// Replaces every occurrence of `literal` (non-empty), left to right.
std::string LiteralReplaceAll(std::string_view text, std::string_view literal,
                              std::string_view content);

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_REGEX_H_
