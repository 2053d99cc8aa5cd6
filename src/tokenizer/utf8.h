// UTF-8 helpers for the tokenizer: code point iteration, validation, lossy
// repair and detection of an incomplete sequence at the end of a buffer.
//
// "Lossy" repair follows the Unicode "maximal subpart" practice (the one
// Rust's String::from_utf8_lossy uses, and so Hugging Face tokenizers): each
// maximal invalid subpart becomes one U+FFFD. Stateless; thread-safe.
#ifndef TESSERA_TOKENIZER_UTF8_H_
#define TESSERA_TOKENIZER_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/utf8.h"

namespace tessera::tok {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// What starts at a byte offset of a UTF-8 buffer.
struct Utf8Sequence {
  enum Kind { kValid, kInvalid, kTruncated };
  Kind kind;
  // kValid: bytes of the code point; kInvalid: bytes of the maximal invalid
  // subpart (>= 1); kTruncated: bytes present of a sequence the buffer cuts.
  size_t length;
  uint32_t code_point;  // meaningful for kValid only
};

// Classifies the sequence starting at s[pos]; pos < s.size().
Utf8Sequence ReadUtf8(std::string_view s, size_t pos);

// Appends the UTF-8 encoding of a code point (base/utf8.h).
using ::tessera::AppendUtf8;

bool IsValidUtf8(std::string_view s);

// Returns `s` with every maximal invalid subpart (a truncated tail included)
// replaced by U+FFFD.
std::string ToValidUtf8(std::string_view s);

// Number of bytes (0-3) at the end of `s` that begin a valid but unfinished
// sequence: the bytes a streaming decoder must hold back.
size_t IncompleteUtf8TailLength(std::string_view s);

// Unicode White_Space (what Rust's char::is_whitespace tests).
bool IsUnicodeWhitespace(uint32_t cp);

// Unicode "\w" (Alphabetic, marks, decimal digits, connector punctuation,
// Join_Control), used by the added-token `single_word` rule.
bool IsWordChar(uint32_t cp);

// Calls fn(code_point, byte_offset, byte_length) for each code point of a
// valid UTF-8 string.
template <typename Fn>
void ForEachCodePoint(std::string_view s, Fn&& fn) {
  size_t pos = 0;
  while (pos < s.size()) {
    Utf8Sequence seq = ReadUtf8(s, pos);
    size_t len = seq.length;
    fn(seq.kind == Utf8Sequence::kValid ? seq.code_point : 0xFFFDu, pos, len);
    pos += len;
  }
}

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_UTF8_H_
