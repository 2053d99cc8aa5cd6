#include "tokenizer/added_tokens.h"

#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

// The code point that ends just before byte `end` of valid UTF-8 `text`.
Utf8Sequence LastCodePoint(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80) {
    --start;
  }
  return ReadUtf8(text, start);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens,
                                     const std::vector<std::string>& patterns)
    : tokens_(tokens) {
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::string& pattern = patterns[t];
    if (pattern.empty()) continue;
    int32_t node = 0;
    for (char ch : pattern) {
      const uint8_t byte = static_cast<uint8_t>(ch);
      int32_t child = -1;
      for (auto [b, index] : nodes_[node].children) {
        if (b == byte) child = index;
      }
      if (child < 0) {
        child = static_cast<int32_t>(nodes_.size());
        nodes_[node].children.emplace_back(byte, child);
        nodes_.emplace_back();
      }
      node = child;
    }
    // For two tokens with the same text, the first one wins.
    if (nodes_[node].token < 0) nodes_[node].token = static_cast<int32_t>(t);
    first_byte_[static_cast<uint8_t>(pattern[0])] = true;
  }
}

bool AddedTokenMatcher::LongestAt(std::string_view text, size_t pos,
                                  int32_t* token, size_t* length) const {
  int32_t node = 0;
  bool found = false;
  for (size_t i = pos; i < text.size(); ++i) {
    const uint8_t byte = static_cast<uint8_t>(text[i]);
    int32_t child = -1;
    for (auto [b, index] : nodes_[node].children) {
      if (b == byte) {
        child = index;
        break;
      }
    }
    if (child < 0) break;
    node = child;
    if (nodes_[node].token >= 0) {
      *token = nodes_[node].token;
      *length = i + 1 - pos;
      found = true;
    }
  }
  return found;
}

std::vector<AddedTokenMatcher::Segment> AddedTokenMatcher::Split(
    std::string_view text) const {
  std::vector<Segment> segments;
  size_t start_offset = 0;  // end of the previous segment pushed
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    int32_t t = -1;
    size_t length = 0;
    if (!LongestAt(text, pos, &t, &length)) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[t];
    size_t begin = pos;
    size_t end = pos + length;
    pos = end;  // the next search starts after this match, used or not

    if (token.single_word) {
      const bool word_before =
          begin > 0 && IsWordChar(LastCodePoint(text, begin).code_point);
      const bool word_after =
          end < text.size() && IsWordChar(ReadUtf8(text, end).code_point);
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      while (begin > start_offset) {
        Utf8Sequence prev = LastCodePoint(text, begin);
        if (!IsUnicodeWhitespace(prev.code_point)) break;
        begin -= prev.length;
      }
    }
    if (token.rstrip) {
      while (end < text.size()) {
        Utf8Sequence next = ReadUtf8(text, end);
        if (!IsUnicodeWhitespace(next.code_point)) break;
        end += next.length;
      }
      pos = end;
    }
    if (begin > start_offset) segments.push_back({start_offset, begin, -1});
    segments.push_back({begin, end, token.id});
    start_offset = end;
  }
  if (start_offset < text.size()) {
    segments.push_back({start_offset, text.size(), -1});
  }
  return segments;
}

}  // namespace tessera::tok
