#include "tokenizer/utf8.h"

#include <utf8proc.h>

namespace tessera::tok {

namespace {

// Range allowed for the second byte after lead byte `b` (Unicode Table 3-7).
void SecondByteRange(uint8_t b, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b == 0xE0) *lo = 0xA0;
  if (b == 0xED) *hi = 0x9F;
  if (b == 0xF0) *lo = 0x90;
  if (b == 0xF4) *hi = 0x8F;
}

// Total sequence length announced by a lead byte, 0 when it cannot lead.
size_t LeadLength(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

}  // namespace

Utf8Sequence ReadUtf8(std::string_view s, size_t pos) {
  const uint8_t b0 = static_cast<uint8_t>(s[pos]);
  const size_t need = LeadLength(b0);
  if (need == 1) return {Utf8Sequence::kValid, 1, b0};
  if (need == 0) return {Utf8Sequence::kInvalid, 1, 0};
  uint32_t cp = b0 & (need == 2 ? 0x1F : need == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < need; ++k) {
    if (pos + k >= s.size()) return {Utf8Sequence::kTruncated, k, 0};
    const uint8_t b = static_cast<uint8_t>(s[pos + k]);
    uint8_t lo = 0x80, hi = 0xBF;
    if (k == 1) SecondByteRange(b0, &lo, &hi);
    if (b < lo || b > hi) return {Utf8Sequence::kInvalid, k, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {Utf8Sequence::kValid, need, cp};
}

bool IsValidUtf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<uint8_t>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    Utf8Sequence seq = ReadUtf8(s, pos);
    if (seq.kind != Utf8Sequence::kValid) return false;
    pos += seq.length;
  }
  return true;
}

std::string ToValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    Utf8Sequence seq = ReadUtf8(s, pos);
    if (seq.kind == Utf8Sequence::kValid) {
      out.append(s.substr(pos, seq.length));
    } else {
      out.append(kReplacementChar);
    }
    pos += seq.length;
  }
  return out;
}

size_t IncompleteUtf8TailLength(std::string_view s) {
  // A lead byte (< 0x80 or >= 0xC0) always starts a new sequence, so the only
  // candidates are the last three bytes.
  for (size_t k = 1; k <= 3 && k <= s.size(); ++k) {
    const size_t pos = s.size() - k;
    const uint8_t b = static_cast<uint8_t>(s[pos]);
    if (b >= 0x80 && b < 0xC0) continue;  // continuation: look further back
    Utf8Sequence seq = ReadUtf8(s, pos);
    return seq.kind == Utf8Sequence::kTruncated ? k : 0;
  }
  return 0;
}

bool IsUnicodeWhitespace(uint32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool IsWordChar(uint32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
           (cp >= 'A' && cp <= 'Z') || cp == '_';
  }
  // Join_Control, and the Alphabetic symbols (circled and squared letters).
  if (cp == 0x200C || cp == 0x200D || (cp >= 0x24B6 && cp <= 0x24E9) ||
      (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
      (cp >= 0x1F170 && cp <= 0x1F189)) {
    return true;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

}  // namespace tessera::tok
