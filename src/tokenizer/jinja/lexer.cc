#include "tokenizer/jinja/lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/text.h"

namespace tessera::jinja {
namespace {

// The end of the whitespace run starting at `p` (Python's \s: Unicode
// whitespace, as Jinja's lexer regexes see it).
size_t SkipSpaces(std::string_view s, size_t p) {
  while (p < s.size()) {
    size_t len = 1;
    const auto b = static_cast<unsigned char>(s[p]);
    if (b >= 0x80) len = b >= 0xF0 ? 4 : (b >= 0xE0 ? 3 : 2);
    const std::u32string cp = text::Decode(s.substr(p, len));
    if (cp.size() != 1 || !text::IsSpace(cp[0])) break;
    p += len;
  }
  return p;
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

// Longest first, so "//" wins over "/".
constexpr std::array<std::string_view, 25> kOperators = {
    "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
    "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ","};

int CountNewlines(std::string_view s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// Python's "unicode-escape" decoding of a string literal body.
StatusOr<std::string> Unescape(std::string_view body, int line) {
  std::string out;
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out.push_back(body[i]);
      continue;
    }
    const char c = body[++i];
    auto hex = [&](size_t digits) -> StatusOr<char32_t> {
      uint32_t cp = 0;
      const std::string_view h = body.substr(i + 1, digits);
      const auto res = std::from_chars(h.data(), h.data() + h.size(), cp, 16);
      if (h.size() != digits || res.ptr != h.data() + h.size() ||
          cp > 0x10FFFF) {
        return TemplateError(line, fmt::format("truncated \\{} escape in a "
                                               "string literal",
                                               c));
      }
      i += digits;
      return static_cast<char32_t>(cp);
    };
    switch (c) {
      case '\n':
        break;  // line continuation
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x': {
        TSR_ASSIGN_OR_RETURN(char32_t cp, hex(2));
        text::AppendUtf8(cp, &out);
        break;
      }
      case 'u': {
        TSR_ASSIGN_OR_RETURN(char32_t cp, hex(4));
        text::AppendUtf8(cp, &out);
        break;
      }
      case 'U': {
        TSR_ASSIGN_OR_RETURN(char32_t cp, hex(8));
        text::AppendUtf8(cp, &out);
        break;
      }
      case 'N':
        return UnsupportedError(line, "\\N{...} escapes are not supported");
      default:
        if (c >= '0' && c <= '7') {
          char32_t cp = c - '0';
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' &&
                          body[i + 1] <= '7';
               ++k) {
            cp = cp * 8 + (body[++i] - '0');
          }
          text::AppendUtf8(cp, &out);
        } else {  // unknown escapes stay as written
          out.push_back('\\');
          out.push_back(c);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  Lexer(std::string source, const LexerOptions& options)
      : src_(std::move(source)), options_(options) {}

  StatusOr<std::vector<Token>> Run() {
    const size_t n = src_.size();
    while (pos_ < n) {
      const size_t tag = FindTagStart(pos_);
      if (tag == std::string::npos) {
        EmitText(std::string_view(src_).substr(pos_));
        break;
      }
      const char kind = src_[tag + 1];
      size_t after = tag + 2;
      char sign = 0;
      if (after < n && (src_[after] == '-' || src_[after] == '+')) {
        sign = src_[after++];
      }
      std::string_view text = std::string_view(src_).substr(pos_, tag - pos_);
      text = ApplyLeftControl(text, sign, kind != '{');
      EmitText(text);
      line_ += CountNewlines(std::string_view(src_).substr(pos_, tag - pos_));
      pos_ = after;
      const int tag_line = line_;
      if (kind == '#') {
        TSR_RETURN_IF_ERROR(LexComment(tag_line));
      } else if (kind == '%' && MatchRawBegin()) {
        TSR_RETURN_IF_ERROR(LexRaw(tag_line));
      } else {
        TSR_RETURN_IF_ERROR(LexTag(kind == '%', tag_line));
      }
    }
    Token end;
    end.kind = TokenKind::kEnd;
    end.line = line_;
    tokens_.push_back(end);
    return std::move(tokens_);
  }

 private:
  size_t FindTagStart(size_t from) const {
    size_t p = from;
    while ((p = src_.find('{', p)) != std::string::npos) {
      if (p + 1 < src_.size() &&
          (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) {
        return p;
      }
      ++p;
    }
    return std::string::npos;
  }

  // Whitespace control on the text before a tag: '-' strips all trailing
  // whitespace; lstrip_blocks strips spaces/tabs back to the line start when
  // nothing else stands between the line start and a block/comment tag.
  std::string_view ApplyLeftControl(std::string_view text, char sign,
                                    bool lstrip_eligible) const {
    if (sign == '-') {
      const std::string stripped = text::Strip(text, std::nullopt, false, true);
      return text.substr(0, stripped.size());
    }
    if (sign == '+' || !options_.lstrip_blocks || !lstrip_eligible) return text;
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting_) return text;
    const std::string_view tail = text.substr(l_pos);
    if (tail.empty() || !text::Strip(tail, std::nullopt, true, true).empty()) {
      return text;
    }
    return text.substr(0, l_pos);
  }

  void EmitText(std::string_view text) {
    if (text.empty()) return;
    Token t;
    t.kind = TokenKind::kText;
    t.text = std::string(text);
    t.line = line_;
    tokens_.push_back(std::move(t));
  }

  void Emit(TokenKind kind, std::string text, int line) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = line;
    tokens_.push_back(std::move(t));
  }

  bool StartsWith(size_t at, std::string_view s) const {
    return std::string_view(src_).substr(at, s.size()) == s;
  }

  // Consumes a block-style tag end at pos_ ("-%}" + whitespace, "+%}", or
  // "%}" + one newline under trim_blocks); `close` is "%}" or "#}".
  bool ConsumeBlockEnd(std::string_view close) {
    size_t p = pos_;
    char sign = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
    if (!StartsWith(p, close)) return false;
    p += close.size();
    if (sign == '-') {
      p = SkipSpaces(src_, p);
    } else if (sign == 0 && options_.trim_blocks && p < src_.size() &&
               src_[p] == '\n') {
      ++p;
    }
    Advance(p);
    return true;
  }

  // Moves pos_ to p, counting newlines and noting whether a line starts.
  void Advance(size_t p) {
    line_ += CountNewlines(std::string_view(src_).substr(pos_, p - pos_));
    line_starting_ = p > 0 && src_[p - 1] == '\n';
    pos_ = p;
  }

  Status LexComment(int tag_line) {
    size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) {
      return TemplateError(tag_line, "missing end of comment tag '#}'");
    }
    if (close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+')) {
      --close;
    }
    Advance(close);
    ConsumeBlockEnd("#}");
    return OkStatus();
  }

  // `{% raw %}` or `{%- raw -%}`: the name raw alone in the tag.
  bool MatchRawBegin() {
    size_t p = pos_;
    p = SkipSpaces(src_, p);
    if (!StartsWith(p, "raw")) return false;
    p += 3;
    p = SkipSpaces(src_, p);
    if (StartsWith(p, "-%}")) {
      p += 3;
      p = SkipSpaces(src_, p);
    } else if (StartsWith(p, "%}")) {
      p += 2;  // Jinja applies no trim_blocks after {% raw %}
    } else {
      return false;
    }
    Advance(p);
    return true;
  }

  Status LexRaw(int tag_line) {
    size_t p = pos_;
    while ((p = src_.find("{%", p)) != std::string::npos) {
      size_t q = p + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+'))
        sign = src_[q++];
      q = SkipSpaces(src_, q);
      if (StartsWith(q, "endraw")) {
        q += 6;
        q = SkipSpaces(src_, q);
        if (StartsWith(q, "%}") || StartsWith(q, "-%}") ||
            StartsWith(q, "+%}")) {
          const std::string_view body =
              std::string_view(src_).substr(pos_, p - pos_);
          EmitText(ApplyLeftControl(body, sign, true));
          Advance(q);
          ConsumeBlockEnd("%}");
          return OkStatus();
        }
      }
      p += 2;
    }
    return TemplateError(tag_line, "missing '{% endraw %}' for '{% raw %}'");
  }

  Status LexTag(bool block, int tag_line) {
    Emit(block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin,
         block ? "{%" : "{{", tag_line);
    std::vector<char> balance;
    const size_t n = src_.size();
    while (true) {
      size_t p = pos_;
      p = SkipSpaces(src_, p);
      Advance(p);
      if (balance.empty()) {
        const int end_line = line_;
        if (block ? ConsumeBlockEnd("%}") : ConsumeVariableEnd()) {
          Emit(block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd,
               block ? "%}" : "}}", end_line);
          return OkStatus();
        }
      }
      if (pos_ >= n) {
        return TemplateError(
            tag_line, fmt::format("unexpected end of template: '{}' opened "
                                  "here is never closed with '{}'",
                                  block ? "{%" : "{{", block ? "%}" : "}}"));
      }
      TSR_RETURN_IF_ERROR(LexToken(&balance));
    }
  }

  bool ConsumeVariableEnd() {
    size_t p = pos_;
    const bool strip = StartsWith(p, "-}}");
    if (strip) ++p;
    if (!StartsWith(p, "}}")) return false;
    p += 2;
    if (strip) {
      p = SkipSpaces(src_, p);
    }
    Advance(p);
    return true;
  }

  Status LexToken(std::vector<char>* balance) {
    const size_t n = src_.size();
    const size_t start = pos_;
    const char c = src_[start];
    Token t;
    t.line = line_;
    if (IsDigit(c)) return LexNumber();
    if (IsIdentStart(c)) {
      size_t p = start;
      while (p < n && IsIdentChar(src_[p])) ++p;
      Emit(TokenKind::kName, src_.substr(start, p - start), line_);
      Advance(p);
      return OkStatus();
    }
    if (c == '\'' || c == '"') {
      size_t p = start + 1;
      while (p < n && src_[p] != c) p += src_[p] == '\\' ? 2 : 1;
      if (p >= n) return TemplateError(line_, "unterminated string literal");
      TSR_ASSIGN_OR_RETURN(
          std::string value,
          Unescape(std::string_view(src_).substr(start + 1, p - start - 1),
                   line_));
      Emit(TokenKind::kString, std::move(value), line_);
      Advance(p + 1);
      return OkStatus();
    }
    for (std::string_view op : kOperators) {
      if (!StartsWith(start, op)) continue;
      if (op == "(" || op == "[" || op == "{") {
        balance->push_back(op[0]);
      } else if (op == ")" || op == "]" || op == "}") {
        const char want = op == ")" ? '(' : (op == "]" ? '[' : '{');
        if (balance->empty() || balance->back() != want) {
          return TemplateError(line_, fmt::format("unexpected '{}'", op));
        }
        balance->pop_back();
      }
      Emit(TokenKind::kOperator, std::string(op), line_);
      Advance(start + op.size());
      return OkStatus();
    }
    return TemplateError(
        line_,
        fmt::format("unexpected character '{}' in a tag", std::string(1, c)));
  }

  // Reads [0-9](_?[0-9])* from p; returns the end and appends the digits.
  size_t ScanDigits(size_t p, std::string* digits) const {
    while (p < src_.size()) {
      if (IsDigit(src_[p])) {
        digits->push_back(src_[p++]);
      } else if (src_[p] == '_' && p + 1 < src_.size() &&
                 IsDigit(src_[p + 1]) && !digits->empty()) {
        ++p;
      } else {
        break;
      }
    }
    return p;
  }

  Status LexNumber() {
    const size_t start = pos_;
    const int line = line_;
    const size_t n = src_.size();
    // 0x / 0o / 0b integers.
    if (src_[start] == '0' && start + 2 < n) {
      const char p = static_cast<char>(src_[start + 1] | 0x20);
      const int base = p == 'x' ? 16 : (p == 'o' ? 8 : (p == 'b' ? 2 : 0));
      if (base != 0) {
        size_t q = start + 2;
        while (q < n && (std::isxdigit(static_cast<unsigned char>(src_[q])) ||
                         src_[q] == '_')) {
          ++q;
        }
        const auto value = text::ParseInt(
            std::string_view(src_).substr(start, q - start), base);
        if (!value) return TemplateError(line, "invalid integer literal");
        Token t;
        t.kind = TokenKind::kInteger;
        t.int_value = *value;
        t.line = line;
        tokens_.push_back(t);
        Advance(q);
        return OkStatus();
      }
    }
    std::string literal;
    size_t p = ScanDigits(start, &literal);
    bool is_float = false;
    const bool after_dot = start > 0 && src_[start - 1] == '.';  // x.0.1
    if (!after_dot) {
      if (p + 1 < n && src_[p] == '.' && IsDigit(src_[p + 1])) {
        literal.push_back('.');
        p = ScanDigits(p + 1, &literal);
        is_float = true;
      }
      if (p < n && (src_[p] == 'e' || src_[p] == 'E')) {
        size_t q = p + 1;
        std::string exp = "e";
        if (q < n && (src_[q] == '+' || src_[q] == '-'))
          exp.push_back(src_[q++]);
        if (q < n && IsDigit(src_[q])) {
          std::string digits;
          p = ScanDigits(q, &digits);
          literal += exp + digits;
          is_float = true;
        }
      }
    }
    Token t;
    t.line = line;
    if (is_float) {
      t.kind = TokenKind::kFloat;
      std::from_chars(literal.data(), literal.data() + literal.size(),
                      t.float_value);
    } else {
      t.kind = TokenKind::kInteger;
      const auto res = std::from_chars(
          literal.data(), literal.data() + literal.size(), t.int_value);
      if (res.ec != std::errc()) {
        return TemplateError(line, "integer literal out of 64-bit range");
      }
    }
    tokens_.push_back(t);
    Advance(p);
    return OkStatus();
  }

  std::string src_;
  const LexerOptions& options_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

std::string NormalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

StatusOr<std::vector<Token>> Tokenize(std::string_view source,
                                      const LexerOptions& options) {
  if (!text::IsValidUtf8(source)) {
    return InvalidArgumentError("template source is not valid UTF-8");
  }
  return Lexer(NormalizeNewlines(source), options).Run();
}

}  // namespace tessera::jinja
