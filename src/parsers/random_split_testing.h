// Test helpers for the parsers' streaming property tests: random texts built
// from fragments, random splits of a text into whole-UTF-8 pieces, and a
// UTF-8 validity check. Test-only; not thread-safe (callers own the rng).
#ifndef TESSERA_PARSERS_RANDOM_SPLIT_TESTING_H_
#define TESSERA_PARSERS_RANDOM_SPLIT_TESTING_H_

#include <algorithm>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::parsers::testing {

// Concatenation of 0..max_fragments fragments drawn uniformly.
inline std::string RandomText(std::mt19937& rng,
                              const std::vector<std::string>& fragments,
                              int max_fragments) {
  std::uniform_int_distribution<int> count(0, max_fragments);
  std::uniform_int_distribution<size_t> pick(0, fragments.size() - 1);
  std::string text;
  for (int n = count(rng); n > 0; --n) text += fragments[pick(rng)];
  return text;
}

// Splits `text` into pieces at random UTF-8 character boundaries; pieces may
// be empty (a detokenizer step that produced no text).
inline std::vector<std::string> RandomSplit(std::mt19937& rng,
                                            std::string_view text) {
  std::vector<std::string> pieces;
  std::uniform_int_distribution<int> len(0, 6);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = std::min(text.size(), pos + len(rng));
    while (end < text.size() &&
           (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) {
      ++end;
    }
    pieces.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) pieces.emplace_back();
  return pieces;
}

// True when `s` is well-formed UTF-8 (no overlong/surrogate checks needed
// here: the tests only cut text, they never make new bytes).
inline bool IsWholeUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80           ? 1
               : (c >> 5) == 0x6  ? 2
               : (c >> 4) == 0xE  ? 3
               : (c >> 3) == 0x1E ? 4
                                  : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

}  // namespace tessera::parsers::testing

#endif  // TESSERA_PARSERS_RANDOM_SPLIT_TESTING_H_
