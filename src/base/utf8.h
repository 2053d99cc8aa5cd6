// UTF-8 helpers shared by the tokenizer, the chat template engine and the
// server: encoding one code point, counting characters. Pure; thread-safe.
#ifndef TESSERA_BASE_UTF8_H_
#define TESSERA_BASE_UTF8_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// Appends the UTF-8 encoding of `cp` (must be a Unicode scalar value).
inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Characters (code points) in UTF-8 `text`: bytes that are not
// continuation bytes (an invalid byte counts as one, as U+FFFD would).
inline int64_t CountUtf8Chars(std::string_view text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace tessera

#endif  // TESSERA_BASE_UTF8_H_
