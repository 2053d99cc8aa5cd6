// Helpers shared by the output parsers for spotting a tag that has only
// partly arrived in a stream. Pure functions; thread-safe.
#ifndef TESSERA_PARSERS_PARTIAL_TAG_H_
#define TESSERA_PARSERS_PARTIAL_TAG_H_

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace tessera::parsers {

// Length of the longest suffix of `text` that is a PROPER prefix of `tag`
// (0 if none). That suffix must be held back: the next piece may complete
// the tag. Callers first check that `text` does not contain `tag` itself.
// Cost: O(|tag|^2) at most, independent of |text|.
inline size_t PartialTagSuffix(std::string_view text, std::string_view tag) {
  size_t max_len = std::min(text.size(), tag.empty() ? 0 : tag.size() - 1);
  for (size_t len = max_len; len > 0; --len) {
    if (text.substr(text.size() - len) == tag.substr(0, len)) return len;
  }
  return 0;
}

// True for the newline bytes dropped after a closing tag.
inline bool IsNewline(char c) { return c == '\n' || c == '\r'; }

// True for the whitespace allowed before an opening tag.
inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace tessera::parsers

#endif  // TESSERA_PARSERS_PARTIAL_TAG_H_
