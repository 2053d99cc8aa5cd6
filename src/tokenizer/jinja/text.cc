#include "tokenizer/jinja/text.h"

#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace tessera::jinja::text {
namespace {

constexpr char32_t kReplacement = 0xFFFD;

// Decodes one code point at s[*i], advancing *i; invalid bytes give U+FFFD.
char32_t DecodeOne(std::string_view s, size_t* i) {
  const auto b0 = static_cast<unsigned char>(s[*i]);
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  int extra = 0;
  char32_t cp = 0;
  if ((b0 & 0xE0) == 0xC0) {
    extra = 1;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    extra = 2;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    extra = 3;
    cp = b0 & 0x07;
  } else {
    ++*i;
    return kReplacement;
  }
  if (*i + extra >= s.size()) {
    ++*i;
    return kReplacement;
  }
  for (int k = 1; k <= extra; ++k) {
    const auto b = static_cast<unsigned char>(s[*i + k]);
    if ((b & 0xC0) != 0x80) {
      ++*i;
      return kReplacement;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr char32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*i;
    return kReplacement;
  }
  *i += extra + 1;
  return cp;
}

// The C.UTF-8 locale gives towupper/towlower the Unicode case tables.
locale_t Utf8Locale() {
  static const locale_t loc =
      newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  return loc;
}

char32_t ToUpper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  locale_t loc = Utf8Locale();
  return loc ? static_cast<char32_t>(towupper_l(static_cast<wint_t>(c), loc))
             : c;
}

char32_t ToLower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  locale_t loc = Utf8Locale();
  return loc ? static_cast<char32_t>(towlower_l(static_cast<wint_t>(c), loc))
             : c;
}

bool IsCased(char32_t c) { return ToUpper(c) != c || ToLower(c) != c; }

void AppendUpper(char32_t c, std::u32string* out) {
  if (c == U'\u00DF') {  // ß has no single upper-case code point.
    out->append(U"SS");
    return;
  }
  out->push_back(ToUpper(c));
}

bool InSet(char32_t c, const std::optional<std::u32string>& set) {
  if (!set) return IsSpace(c);
  return set->find(c) != std::u32string::npos;
}

// Code point index of byte offset `byte` in `s`.
int64_t CodepointIndex(std::string_view s, size_t byte) {
  return Length(s.substr(0, byte));
}

}  // namespace

std::u32string Decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) out.push_back(DecodeOne(s, &i));
  return out;
}

std::string Encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) AppendUtf8(c, &out);
  return out;
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t start = i;
    // A genuine U+FFFD takes 3 bytes; an invalid byte decodes to it in 1.
    if (DecodeOne(s, &i) == kReplacement && i - start != 3) return false;
  }
  return true;
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

int64_t Length(std::string_view s) {
  int64_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string Substr(std::string_view s, int64_t begin, int64_t end) {
  if (end <= begin) return "";
  if (IsAscii(s)) return std::string(s.substr(begin, end - begin));
  const std::u32string u = Decode(s);
  return Encode(std::u32string_view(u).substr(begin, end - begin));
}

bool IsSpace(char32_t c) {
  switch (c) {
    case U' ':
    case U'\t':
    case U'\n':
    case U'\v':
    case U'\f':
    case U'\r':
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
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
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::string Strip(std::string_view s, const std::optional<std::string>& chars,
                  bool left, bool right) {
  const std::u32string u = Decode(s);
  std::optional<std::u32string> set;
  if (chars) set = Decode(*chars);
  size_t begin = 0, end = u.size();
  if (left) {
    while (begin < end && InSet(u[begin], set)) ++begin;
  }
  if (right) {
    while (end > begin && InSet(u[end - 1], set)) --end;
  }
  return Encode(std::u32string_view(u).substr(begin, end - begin));
}

std::vector<std::string> Split(std::string_view s,
                               const std::optional<std::string>& sep,
                               int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  const std::u32string u = Decode(s);
  size_t i = 0;
  while (true) {
    while (i < u.size() && IsSpace(u[i])) ++i;
    if (i == u.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(Encode(std::u32string_view(u).substr(i)));
      break;
    }
    size_t j = i;
    while (j < u.size() && !IsSpace(u[j])) ++j;
    out.push_back(Encode(std::u32string_view(u).substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> RSplit(std::string_view s,
                                const std::optional<std::string>& sep,
                                int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
  } else {
    const std::u32string u = Decode(s);
    size_t end = u.size();
    while (true) {
      while (end > 0 && IsSpace(u[end - 1])) --end;
      if (end == 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(Encode(std::u32string_view(u).substr(0, end)));
        break;
      }
      size_t j = end;
      while (j > 0 && !IsSpace(u[j - 1])) --j;
      out.push_back(Encode(std::u32string_view(u).substr(j, end - j)));
      end = j;
    }
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> SplitLines(std::string_view s, bool keepends) {
  const std::u32string u = Decode(s);
  std::vector<std::string> out;
  size_t start = 0, i = 0;
  while (i < u.size()) {
    const char32_t c = u[i];
    const bool boundary = c == U'\n' || c == U'\r' || c == U'\v' ||
                          c == U'\f' || (c >= 0x1C && c <= 0x1E) || c == 0x85 ||
                          c == 0x2028 || c == 0x2029;
    if (!boundary) {
      ++i;
      continue;
    }
    size_t eol = i + 1;
    if (c == U'\r' && eol < u.size() && u[eol] == U'\n') ++eol;
    out.push_back(Encode(
        std::u32string_view(u).substr(start, (keepends ? eol : i) - start)));
    start = i = eol;
  }
  if (start < u.size())
    out.push_back(Encode(std::u32string_view(u).substr(start)));
  return out;
}

std::string Upper(std::string_view s) {
  std::u32string out;
  for (char32_t c : Decode(s)) AppendUpper(c, &out);
  return Encode(out);
}

std::string Lower(std::string_view s) {
  std::u32string u = Decode(s);
  for (char32_t& c : u) c = ToLower(c);
  return Encode(u);
}

std::string Capitalize(std::string_view s) {
  const std::u32string u = Decode(s);
  std::u32string out;
  for (size_t i = 0; i < u.size(); ++i) {
    if (i == 0) {
      AppendUpper(u[i], &out);
    } else {
      out.push_back(ToLower(u[i]));
    }
  }
  return Encode(out);
}

std::string Title(std::string_view s) {
  std::u32string out;
  bool previous_cased = false;
  for (char32_t c : Decode(s)) {
    if (previous_cased) {
      out.push_back(ToLower(c));
    } else {
      AppendUpper(c, &out);
    }
    previous_cased = IsCased(c);
  }
  return Encode(out);
}

bool IsUpperString(std::string_view s) {
  bool cased = false;
  for (char32_t c : Decode(s)) {
    if (ToLower(c) != c)
      cased = true;  // an upper-case letter
    else if (ToUpper(c) != c)
      return false;  // a lower-case letter
  }
  return cased;
}

bool IsLowerString(std::string_view s) {
  bool cased = false;
  for (char32_t c : Decode(s)) {
    if (ToUpper(c) != c)
      cased = true;
    else if (ToLower(c) != c)
      return false;
  }
  return cased;
}

size_t ReplacedSize(std::string_view s, std::string_view old,
                    std::string_view repl, int64_t count) {
  uint64_t hits = 0;
  if (old.empty()) {
    hits = Decode(s).size() + 1;
  } else {
    for (size_t pos = s.find(old); pos != std::string_view::npos;
         pos = s.find(old, pos + old.size())) {
      ++hits;
      if (count >= 0 && hits >= static_cast<uint64_t>(count)) break;
    }
  }
  if (count >= 0) hits = std::min<uint64_t>(hits, static_cast<uint64_t>(count));
  // Saturating: hits * repl can exceed size_t for a hostile input.
  const uint64_t removed = hits * old.size();
  if (repl.size() != 0 &&
      hits > (std::numeric_limits<uint64_t>::max() - s.size()) / repl.size()) {
    return std::numeric_limits<size_t>::max();
  }
  return static_cast<size_t>(s.size() - removed + hits * repl.size());
}

std::string Replace(std::string_view s, std::string_view old,
                    std::string_view repl, int64_t count) {
  std::string out;
  if (old.empty()) {
    const std::u32string u = Decode(s);
    int64_t done = 0;
    for (size_t i = 0; i <= u.size(); ++i) {
      if (count < 0 || done < count) {
        out.append(repl);
        ++done;
      }
      if (i < u.size()) AppendUtf8(u[i], &out);
    }
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos));
    out.append(repl);
    pos = hit + old.size();
    ++done;
  }
  out.append(s.substr(pos));
  return out;
}

int64_t Find(std::string_view s, std::string_view sub) {
  const size_t hit = s.find(sub);
  return hit == std::string_view::npos ? -1 : CodepointIndex(s, hit);
}

int64_t RFind(std::string_view s, std::string_view sub) {
  const size_t hit = s.rfind(sub);
  return hit == std::string_view::npos ? -1 : CodepointIndex(s, hit);
}

int64_t Count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return Length(s) + 1;
  int64_t n = 0;
  size_t pos = 0;
  while ((pos = s.find(sub, pos)) != std::string_view::npos) {
    ++n;
    pos += sub.size();
  }
  return n;
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string FormatFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form: "d.ddde+XX".
  char buf[64];
  const auto res =
      std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view sci(buf, res.ptr - buf);
  std::string sign;
  if (sci.front() == '-') {
    sign = "-";
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits.push_back(c);
  }
  const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  // Python's repr uses exponent notation when the decimal exponent is below
  // -4 or at least 16.
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out + exp_buf;
  }
  std::string out = sign;
  if (exponent < 0) {
    out += "0." + std::string(-exponent - 1, '0') + digits;
  } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
    out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
  }
  return out;
}

std::string Repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : Decode(s)) {
    char esc[16];
    if (c == static_cast<char32_t>(quote) || c == U'\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (c == U'\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) {
      std::snprintf(esc, sizeof(esc), "\\x%02x", static_cast<unsigned>(c));
      out += esc;
    } else if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
               (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF) {
      std::snprintf(esc, sizeof(esc), "\\u%04x", static_cast<unsigned>(c));
      out += esc;
    } else {
      AppendUtf8(c, &out);
    }
  }
  out.push_back(quote);
  return out;
}

std::optional<int64_t> ParseInt(std::string_view s, int base) {
  const std::string t = Strip(s, std::nullopt, true, true);
  std::string_view v = t;
  bool negative = false;
  if (!v.empty() && (v.front() == '+' || v.front() == '-')) {
    negative = v.front() == '-';
    v.remove_prefix(1);
  }
  if (v.size() > 2 && v[0] == '0') {
    const char p = static_cast<char>(v[1] | 0x20);
    if ((base == 16 && p == 'x') || (base == 8 && p == 'o') ||
        (base == 2 && p == 'b')) {
      v.remove_prefix(2);
      if (!v.empty() && v.front() == '_') v.remove_prefix(1);
    }
  }
  if (v.empty() || v.front() == '_' || v.back() == '_') return std::nullopt;
  std::string digits;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '_') {
      if (v[i + 1] == '_') return std::nullopt;
      continue;
    }
    digits.push_back(v[i]);
  }
  int64_t value = 0;
  const auto res = std::from_chars(digits.data(), digits.data() + digits.size(),
                                   value, base);
  if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

std::optional<double> ParseFloat(std::string_view s) {
  const std::string t = Strip(s, std::nullopt, true, true);
  std::string_view v = t;
  bool negative = false;
  if (!v.empty() && (v.front() == '+' || v.front() == '-')) {
    negative = v.front() == '-';
    v.remove_prefix(1);
  }
  if (v.empty() || v.front() == '_' || v.back() == '_') return std::nullopt;
  std::string cleaned;
  for (size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (c == 'x' || c == 'X') return std::nullopt;  // no hex floats in Python
    if (c == '_') {
      // Python allows one underscore between two digits only.
      if (!std::isdigit(static_cast<unsigned char>(v[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(v[i + 1]))) {
        return std::nullopt;
      }
      continue;
    }
    cleaned.push_back(c);
  }
  double value = 0;
  const auto res =
      std::from_chars(cleaned.data(), cleaned.data() + cleaned.size(), value);
  if (res.ec != std::errc() || res.ptr != cleaned.data() + cleaned.size()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

}  // namespace tessera::jinja::text
