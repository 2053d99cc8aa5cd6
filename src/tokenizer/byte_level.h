// The byte-level alphabet of GPT-2 style BPE: every byte 0-255 is shown as
// one printable code point (printable Latin-1 bytes as themselves, the others
// as U+0100 onwards in byte order), so a vocabulary of strings can spell any
// byte sequence. Tables are built once; thread-safe.
#ifndef TESSERA_TOKENIZER_BYTE_LEVEL_H_
#define TESSERA_TOKENIZER_BYTE_LEVEL_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::tok {

// The UTF-8 text of the code point standing for `byte`.
std::string_view ByteLevelChar(uint8_t byte);

// The byte a code point stands for, or -1 when it is not in the alphabet.
int ByteLevelByte(uint32_t cp);

// Maps every byte of `text` to its alphabet character, appending to `out`.
void ByteLevelEncode(std::string_view text, std::string* out);

// Inverse of ByteLevelEncode for one token: appends its bytes and returns
// true, or returns false (appending nothing) when a character of `token` is
// outside the alphabet.
bool ByteLevelDecodeToken(std::string_view token, std::string* out);

// The value of a hex digit ([0-9a-fA-F]), or -1.
int HexDigit(char c);

// A SentencePiece byte-fallback token "<0xAB>": sets *byte and returns true;
// false for any other token (malformed hex included).
bool ParseByteToken(std::string_view token, uint8_t* byte);

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_BYTE_LEVEL_H_
