// Python `str` semantics over UTF-8 strings, for the Jinja engine.
//
// Jinja templates run on Python strings: lengths, indices and slices count
// code points, `strip()` knows Unicode whitespace, `upper()` maps Unicode
// case, floats print as Python's repr. These free functions give the engine
// the same answers over UTF-8 `std::string`s. Invalid UTF-8 decodes to U+FFFD
// (the engine validates template sources; parsed JSON is valid already).
// All functions are pure and thread-safe.
#ifndef TESSERA_TOKENIZER_JINJA_TEXT_H_
#define TESSERA_TOKENIZER_JINJA_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/utf8.h"

namespace tessera::jinja::text {

std::u32string Decode(std::string_view s);
std::string Encode(std::u32string_view s);
using ::tessera::AppendUtf8;  // base/utf8.h
bool IsValidUtf8(std::string_view s);
bool IsAscii(std::string_view s);

// Number of code points.
int64_t Length(std::string_view s);

// The code points [begin, end) of `s` (indices already clamped to 0..Length).
std::string Substr(std::string_view s, int64_t begin, int64_t end);

// Python's str.isspace() for one code point.
bool IsSpace(char32_t c);

// str.strip / lstrip / rstrip; `chars` absent means Unicode whitespace.
std::string Strip(std::string_view s, const std::optional<std::string>& chars,
                  bool left, bool right);

// str.split / str.rsplit. `sep` absent splits on runs of whitespace and drops
// empty pieces; `maxsplit` < 0 means no limit. `sep` must not be empty.
std::vector<std::string> Split(std::string_view s,
                               const std::optional<std::string>& sep,
                               int64_t maxsplit);
std::vector<std::string> RSplit(std::string_view s,
                                const std::optional<std::string>& sep,
                                int64_t maxsplit);

// str.splitlines (Python's line boundaries: \n \r \r\n \v \f \x1c-\x1e
// \x85 \u2028 \u2029).
std::vector<std::string> SplitLines(std::string_view s, bool keepends);

// Unicode simple case mapping (plus ß -> SS in Upper, as Python does).
std::string Upper(std::string_view s);
std::string Lower(std::string_view s);
// str.capitalize: first code point upper, the rest lower.
std::string Capitalize(std::string_view s);
// str.title: a letter after a cased letter is lowered, any other upper-cased.
std::string Title(std::string_view s);
bool IsUpperString(std::string_view s);  // str.isupper
bool IsLowerString(std::string_view s);  // str.islower

// str.replace; `count` < 0 replaces all. An empty `old` inserts `repl`
// between code points, as Python does.
std::string Replace(std::string_view s, std::string_view old,
                    std::string_view repl, int64_t count);
// The size in bytes of Replace(s, old, repl, count), computed without
// building it (so a caller can refuse a result too large to build).
size_t ReplacedSize(std::string_view s, std::string_view old,
                    std::string_view repl, int64_t count);

// str.find / str.rfind in code points (-1 when absent); str.count.
int64_t Find(std::string_view s, std::string_view sub);
int64_t RFind(std::string_view s, std::string_view sub);
int64_t Count(std::string_view s, std::string_view sub);

// markupsafe.escape: & < > " ' as HTML entities.
std::string HtmlEscape(std::string_view s);

// Python repr(float): shortest round-trip digits, "1.0", "1e-05", "1e+16",
// "inf", "nan".
std::string FormatFloat(double v);

// Python repr(str): single quotes unless the text holds ' and no ".
std::string Repr(std::string_view s);

// Python int(str, base) for base 10 (sign, surrounding whitespace and single
// underscores between digits allowed); nullopt when Python would raise or
// the value does not fit in int64.
std::optional<int64_t> ParseInt(std::string_view s, int base);
// Python float(str): decimal, exponent, "inf", "nan"; nullopt on failure.
std::optional<double> ParseFloat(std::string_view s);

}  // namespace tessera::jinja::text

#endif  // TESSERA_TOKENIZER_JINJA_TEXT_H_
