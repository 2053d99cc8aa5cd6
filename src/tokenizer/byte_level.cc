#include "tokenizer/byte_level.h"

#include <array>

#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

struct Tables {
  std::array<std::string, 256> byte_to_char;
  std::array<uint32_t, 256> byte_to_cp;
  // Code points of the alphabet are all below 0x144.
  std::array<int16_t, 0x144> cp_to_byte;

  Tables() {
    cp_to_byte.fill(-1);
    uint32_t next_extra = 0x100;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next_extra++;
      byte_to_cp[b] = cp;
      AppendUtf8(cp, &byte_to_char[b]);
      cp_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& GetTables() {
  static const Tables tables;
  return tables;
}

}  // namespace

std::string_view ByteLevelChar(uint8_t byte) {
  return GetTables().byte_to_char[byte];
}

int ByteLevelByte(uint32_t cp) {
  const Tables& t = GetTables();
  return cp < t.cp_to_byte.size() ? t.cp_to_byte[cp] : -1;
}

void ByteLevelEncode(std::string_view text, std::string* out) {
  const Tables& t = GetTables();
  out->reserve(out->size() + text.size() * 2);
  for (char c : text) out->append(t.byte_to_char[static_cast<uint8_t>(c)]);
}

bool ByteLevelDecodeToken(std::string_view token, std::string* out) {
  const size_t mark = out->size();
  size_t pos = 0;
  while (pos < token.size()) {
    Utf8Sequence seq = ReadUtf8(token, pos);
    const int b =
        seq.kind == Utf8Sequence::kValid ? ByteLevelByte(seq.code_point) : -1;
    if (b < 0) {
      out->resize(mark);
      return false;
    }
    out->push_back(static_cast<char>(b));
    pos += seq.length;
  }
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseByteToken(std::string_view token, uint8_t* byte) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') {
    return false;
  }
  const int hi = HexDigit(token[3]), lo = HexDigit(token[4]);
  if (hi < 0 || lo < 0) return false;
  *byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

}  // namespace tessera::tok
