#include "grammar/regex_to_ebnf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include "base/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace tessera::grammar {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr int kMaxRegexNesting = 128;

std::string ClassChar(uint32_t cp) {
  if (cp < 0x80 && std::isalnum(static_cast<int>(cp))) {
    return std::string(1, static_cast<char>(cp));
  }
  if (cp <= 0xFFFF) return fmt::format("\\u{:04X}", cp);
  return fmt::format("\\U{:08X}", cp);
}

std::string ClassText(const Ranges& ranges, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (auto [lo, hi] : ranges) {
    out += ClassChar(lo);
    if (hi > lo) out += "-" + ClassChar(hi);
  }
  return out + "]";
}

std::string Utf8(uint32_t cp) {
  std::string out;
  AppendUtf8(cp, &out);
  return out;
}

class RegexParser {
 public:
  RegexParser(std::string_view re, bool json) : re_(re), json_(json) {}

  StatusOr<std::string> Parse() {
    if (pos_ < re_.size() && re_[pos_] == '^') ++pos_;
    std::string out;
    TSR_RETURN_IF_ERROR(Alternation(0, &out));
    if (pos_ < re_.size()) {
      return Error(fmt::format("unexpected '{}'", re_[pos_]));
    }
    return out;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgumentError(fmt::format(
        "regex /{}/ at offset {}: {}", re_, pos_, what));
  }

  bool AtEndAnchor() const { return pos_ + 1 == re_.size() && re_[pos_] == '$'; }

  Status Alternation(int depth, std::string* out) {
    if (depth > kMaxRegexNesting) return Error("groups are nested too deeply");
    std::vector<std::string> alternatives(1);
    while (pos_ < re_.size()) {
      const char c = re_[pos_];
      if (c == ')') break;
      if (c == '|') {
        ++pos_;
        alternatives.emplace_back();
        continue;
      }
      if (AtEndAnchor()) {
        ++pos_;
        break;
      }
      std::string atom;
      TSR_RETURN_IF_ERROR(Atom(depth, &atom));
      TSR_RETURN_IF_ERROR(Quantifier(&atom));
      alternatives.back() += (alternatives.back().empty() ? "" : " ") + atom;
    }
    std::string joined;
    for (size_t i = 0; i < alternatives.size(); ++i) {
      if (i > 0) joined += " | ";
      joined += alternatives[i].empty() ? "\"\"" : alternatives[i];
    }
    *out = "(" + joined + ")";
    return OkStatus();
  }

  Status Quantifier(std::string* atom) {
    if (pos_ >= re_.size()) return OkStatus();
    const char c = re_[pos_];
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      *atom += c;
    } else if (c == '{') {
      const size_t close = re_.find('}', pos_);
      if (close == std::string_view::npos) return Error("unclosed '{'");
      std::string body(re_.substr(pos_ + 1, close - pos_ - 1));
      for (char d : body) {
        if (!std::isdigit(static_cast<unsigned char>(d)) && d != ',') {
          return Error("a repetition must be {m}, {m,} or {m,n}");
        }
      }
      if (body.empty() || body[0] == ',') {
        return Error("a repetition needs its minimum: {m,n}");
      }
      *atom += "{" + body + "}";
      pos_ = close + 1;
    } else {
      return OkStatus();
    }
    // Lazy or possessive: the same strings in a whole match.
    if (pos_ < re_.size() && (re_[pos_] == '?' || re_[pos_] == '+')) ++pos_;
    if (pos_ < re_.size() &&
        (re_[pos_] == '*' || re_[pos_] == '+' || re_[pos_] == '?' ||
         re_[pos_] == '{')) {
      return Error("two quantifiers in a row");
    }
    return OkStatus();
  }

  // The JSON-string form of one literal code point.
  std::string Literal(uint32_t cp) const {
    if (json_) {
      if (cp == '"') return EbnfLiteral("\\\"");
      if (cp == '\\') return EbnfLiteral("\\\\");
      if (cp < 0x20) return EbnfLiteral(fmt::format("\\u{:04x}", cp));
    }
    return EbnfLiteral(Utf8(cp));
  }

  // A class as EBNF; in JSON strings '"', '\' and controls are excluded
  // from negated classes and written escaped when a class includes them.
  std::string Class(Ranges ranges, bool negated) const {
    if (!json_) return ClassText(ranges, negated);
    if (negated) {
      ranges.emplace_back(0, 0x1F);
      ranges.emplace_back('"', '"');
      ranges.emplace_back('\\', '\\');
      return ClassText(ranges, true);
    }
    Ranges plain;
    std::vector<std::string> escaped;
    constexpr std::pair<uint32_t, uint32_t> kExcluded[] = {
        {0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
    for (auto [lo, hi] : ranges) {
      uint32_t a = lo;
      for (auto [elo, ehi] : kExcluded) {
        if (ehi < a || elo > hi) continue;
        if (elo > a) plain.emplace_back(a, elo - 1);
        for (uint32_t cp = std::max(a, elo); cp <= std::min(hi, ehi); ++cp) {
          escaped.push_back(Literal(cp));
        }
        a = std::max(a, ehi + 1);
      }
      if (a <= hi) plain.emplace_back(a, hi);
    }
    std::string out;
    if (!plain.empty()) out = ClassText(plain, false);
    for (const std::string& e : escaped) out += (out.empty() ? "" : " | ") + e;
    return escaped.empty() ? out : "(" + out + ")";
  }

  static Ranges Digits() { return {{'0', '9'}}; }
  static Ranges Word() { return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}; }
  static Ranges Space() { return {{'\t', '\r'}, {' ', ' '}}; }

  Status ReadHex(int digits, uint32_t* cp) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = pos_ < re_.size() ? tok::HexDigit(re_[pos_]) : -1;
      if (d < 0) return Error(fmt::format("expected {} hex digits", digits));
      ++pos_;
      v = v * 16 + static_cast<uint32_t>(d);
    }
    *cp = v;
    return OkStatus();
  }

  // One UTF-8 code point of the pattern (an invalid byte stands for
  // itself, as U+FFFD would not help anyone).
  uint32_t ReadCodepoint() {
    const tok::Utf8Sequence seq = tok::ReadUtf8(re_, pos_);
    const uint32_t cp = seq.kind == tok::Utf8Sequence::kValid
                            ? seq.code_point
                            : static_cast<unsigned char>(re_[pos_]);
    pos_ += seq.kind == tok::Utf8Sequence::kValid ? seq.length : 1;
    return cp;
  }

  // After a backslash: a class shorthand (returned in `ranges`, `negated`)
  // or one code point.
  Status Escape(uint32_t* cp, Ranges* ranges, bool* negated) {
    if (pos_ >= re_.size()) return Error("a lone '\\' at the end");
    const char e = re_[pos_++];
    *negated = false;
    switch (e) {
      case 'd': *ranges = Digits(); return OkStatus();
      case 'w': *ranges = Word(); return OkStatus();
      case 's': *ranges = Space(); return OkStatus();
      case 'D': *ranges = Digits(); *negated = true; return OkStatus();
      case 'W': *ranges = Word(); *negated = true; return OkStatus();
      case 'S': *ranges = Space(); *negated = true; return OkStatus();
      case 'n': *cp = '\n'; return OkStatus();
      case 't': *cp = '\t'; return OkStatus();
      case 'r': *cp = '\r'; return OkStatus();
      case 'f': *cp = '\f'; return OkStatus();
      case 'v': *cp = '\v'; return OkStatus();
      case '0': *cp = 0; return OkStatus();
      case 'x': return ReadHex(2, cp);
      case 'u': return ReadHex(4, cp);
      default:
        if (std::isalnum(static_cast<unsigned char>(e))) {
          --pos_;
          return Error(fmt::format(
              "'\\{}' (backreferences, \\b and other anchors are not "
              "context-free) is not supported",
              e));
        }
        *cp = static_cast<unsigned char>(e);
        return OkStatus();
    }
  }

  Status Atom(int depth, std::string* out) {
    const char c = re_[pos_];
    if (c == '(') {
      ++pos_;
      if (re_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (re_.substr(pos_, 2) == "?<" &&
                 pos_ + 2 < re_.size() && re_[pos_ + 2] != '=' &&
                 re_[pos_ + 2] != '!') {
        const size_t close = re_.find('>', pos_);
        if (close == std::string_view::npos) return Error("unclosed group name");
        pos_ = close + 1;
      } else if (pos_ < re_.size() && re_[pos_] == '?') {
        return Error("lookaround and inline flags are not supported");
      }
      TSR_RETURN_IF_ERROR(Alternation(depth + 1, out));
      if (pos_ >= re_.size() || re_[pos_] != ')') return Error("unclosed '('");
      ++pos_;
      return OkStatus();
    }
    if (c == '[') return ParseClass(out);
    if (c == '.') {
      ++pos_;
      *out = Class({{'\n', '\n'}}, true);
      return OkStatus();
    }
    if (c == '\\') {
      ++pos_;
      uint32_t cp = 0;
      Ranges ranges;
      bool negated = false;
      TSR_RETURN_IF_ERROR(Escape(&cp, &ranges, &negated));
      *out = ranges.empty() ? Literal(cp) : Class(ranges, negated);
      return OkStatus();
    }
    if (c == '*' || c == '+' || c == '?' || c == '{') {
      return Error(fmt::format("'{}' has nothing to repeat", c));
    }
    if (c == '^' || c == '$') {
      return Error("'^' and '$' are only allowed at the ends");
    }
    *out = Literal(ReadCodepoint());
    return OkStatus();
  }

  Status ParseClass(std::string* out) {
    ++pos_;  // [
    bool negated = false;
    if (pos_ < re_.size() && re_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    Ranges ranges;
    bool first = true;
    while (true) {
      if (pos_ >= re_.size()) return Error("unclosed '['");
      if (re_[pos_] == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      uint32_t lo = 0;
      if (re_[pos_] == '\\') {
        ++pos_;
        Ranges shorthand;
        bool shorthand_negated = false;
        TSR_RETURN_IF_ERROR(Escape(&lo, &shorthand, &shorthand_negated));
        if (shorthand_negated) {
          return Error("\\D, \\W and \\S inside a class are not supported");
        }
        if (!shorthand.empty()) {
          ranges.insert(ranges.end(), shorthand.begin(), shorthand.end());
          continue;
        }
      } else {
        lo = ReadCodepoint();
      }
      uint32_t hi = lo;
      if (pos_ + 1 < re_.size() && re_[pos_] == '-' && re_[pos_ + 1] != ']') {
        ++pos_;
        if (re_[pos_] == '\\') {
          ++pos_;
          Ranges shorthand;
          bool ignored = false;
          TSR_RETURN_IF_ERROR(Escape(&hi, &shorthand, &ignored));
          if (!shorthand.empty()) return Error("a range cannot end in a class");
        } else {
          hi = ReadCodepoint();
        }
        if (hi < lo) return Error("a class range runs backwards");
      }
      ranges.emplace_back(lo, hi);
    }
    *out = Class(ranges, negated);
    return OkStatus();
  }

  std::string_view re_;
  bool json_;
  size_t pos_ = 0;
};

}  // namespace

std::string EbnfLiteral(std::string_view bytes) {
  std::string out = "\"";
  for (char ch : bytes) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

StatusOr<std::string> RegexToEbnf(std::string_view regex,
                                  bool inside_json_string) {
  if (regex.size() > 65536) {
    return InvalidArgumentError("regex: longer than 65536 bytes");
  }
  return RegexParser(regex, inside_json_string).Parse();
}

}  // namespace tessera::grammar
