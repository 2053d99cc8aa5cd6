#include "grammar/ebnf.h"

#include <fmt/format.h>

#include <cctype>
#include <map>
#include <string>

#include "base/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace tessera::grammar {
namespace {

constexpr int kMaxNesting = 128;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  StatusOr<std::shared_ptr<const Grammar>> Parse(std::string_view root) {
    auto g = std::make_shared<Grammar>();
    g_ = g.get();
    SkipSpace(true);
    while (pos_ < text_.size()) {
      std::string name = ReadName();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace(true);
      if (text_.substr(pos_, 3) != "::=") {
        return Error(fmt::format("expected '::=' after '{}'", name));
      }
      pos_ += 3;
      const int32_t rule = RuleFor(name);
      if (defined_.count(name)) {
        return Error(fmt::format("rule '{}' is defined twice", name));
      }
      defined_[name] = true;
      TSR_RETURN_IF_ERROR(ParseAlternatives(rule, 0, /*top=*/true));
      SkipSpace(true);
    }
    for (const auto& [name, index] : rule_index_) {
      if (!defined_.count(name)) {
        return InvalidArgumentError(fmt::format(
            "grammar: rule '{}' is used but never defined", name));
      }
    }
    auto it = rule_index_.find(std::string(root));
    if (it == rule_index_.end()) {
      return InvalidArgumentError(
          fmt::format("grammar: there is no '{}' rule to start from", root));
    }
    g->root = it->second;
    TSR_RETURN_IF_ERROR(g->Finalize().WithContext("grammar"));
    return std::shared_ptr<const Grammar>(std::move(g));
  }

 private:
  Status Error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return InvalidArgumentError(
        fmt::format("grammar, line {} column {}: {}", line, col, what));
  }

  // Spaces and comments; newlines too when `newlines`.
  void SkipSpace(bool newlines) {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' ||
                 (newlines && c == '\n')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  static bool NameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
           c == '-';
  }

  std::string ReadName() {
    const size_t start = pos_;
    while (pos_ < text_.size() && NameChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  int32_t RuleFor(const std::string& name) {
    auto it = rule_index_.find(name);
    if (it != rule_index_.end()) return it->second;
    const int32_t r = g_->AddRule(name);
    rule_index_[name] = r;
    return r;
  }

  // True when a new rule definition starts at pos_ (name ::=).
  bool AtRuleStart() const {
    size_t p = pos_;
    while (p < text_.size() && NameChar(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  Status ParseAlternatives(int32_t rule, int depth, bool top) {
    if (depth > kMaxNesting) return Error("groups are nested too deeply");
    while (true) {
      Sequence seq;
      TSR_RETURN_IF_ERROR(ParseSequence(&seq, depth, top));
      g_->AddAlternative(rule, std::move(seq));
      SkipSpace(true);
      if (pos_ < text_.size() && text_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return OkStatus();
    }
  }

  Status ParseSequence(Sequence* seq, int depth, bool top) {
    while (true) {
      SkipSpace(true);
      if (pos_ >= text_.size()) return OkStatus();
      const char c = text_[pos_];
      if (c == '|' || c == ')') return OkStatus();
      if (top && AtRuleStart()) return OkStatus();
      Sequence item;
      TSR_RETURN_IF_ERROR(ParseElement(&item, depth));
      TSR_RETURN_IF_ERROR(ParsePostfix(&item));
      seq->insert(seq->end(), item.begin(), item.end());
    }
  }

  Status ParsePostfix(Sequence* item) {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '*') {
        ++pos_;
        *item = {RuleSymbol(g_->AddStar(*item))};
      } else if (c == '+') {
        ++pos_;
        *item = {RuleSymbol(g_->AddPlus(*item))};
      } else if (c == '?') {
        ++pos_;
        *item = {RuleSymbol(g_->AddOptional(*item))};
      } else if (c == '{') {
        ++pos_;
        int64_t min = 0, max = -1;
        if (!ReadInt(&min)) return Error("expected a number after '{'");
        max = min;
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          max = -1;
          if (pos_ < text_.size() && text_[pos_] != '}') {
            if (!ReadInt(&max)) return Error("expected a number or '}'");
          }
        }
        if (pos_ >= text_.size() || text_[pos_] != '}') {
          return Error("expected '}' to close the repetition");
        }
        ++pos_;
        auto r = g_->AddRepeat(*item, min, max);
        if (!r.ok()) return Error(r.status().message());
        *item = {RuleSymbol(*r)};
      } else {
        return OkStatus();
      }
    }
    return OkStatus();
  }

  bool ReadInt(int64_t* out) {
    SkipSpace(false);
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() &&
           std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      v = v * 10 + (text_[pos_] - '0');
      if (v > 1000000) return false;
      ++pos_;
    }
    SkipSpace(false);
    *out = v;
    return pos_ > start;
  }

  Status ParseElement(Sequence* item, int depth) {
    const char c = text_[pos_];
    if (c == '"' || c == '\'') {
      ++pos_;
      std::string bytes;
      while (true) {
        if (pos_ >= text_.size()) return Error("unterminated string literal");
        const char d = text_[pos_];
        if (d == c) {
          ++pos_;
          break;
        }
        if (d == '\\') {
          uint32_t cp = 0;
          bool raw_byte = false;
          TSR_RETURN_IF_ERROR(ReadEscape(&cp, &raw_byte));
          AppendCodepoint(cp, raw_byte, &bytes);
        } else {
          bytes += d;
          ++pos_;
        }
      }
      AppendLiteral(bytes, item);
      return OkStatus();
    }
    if (c == '[') return ParseClass(item);
    if (c == '.') {
      ++pos_;
      item->push_back(RuleSymbol(g_->AddCodepointClass({}, /*negated=*/true)));
      return OkStatus();
    }
    if (c == '(') {
      ++pos_;
      const int32_t group = g_->AddRule(fmt::format("group_{}", g_->rules.size()));
      TSR_RETURN_IF_ERROR(ParseAlternatives(group, depth + 1, false));
      SkipSpace(true);
      if (pos_ >= text_.size() || text_[pos_] != ')') {
        return Error("expected ')' to close the group");
      }
      ++pos_;
      item->push_back(RuleSymbol(group));
      return OkStatus();
    }
    if (NameChar(c)) {
      item->push_back(RuleSymbol(RuleFor(ReadName())));
      return OkStatus();
    }
    return Error(fmt::format("unexpected '{}'", c));
  }

  static void AppendCodepoint(uint32_t cp, bool raw_byte, std::string* out) {
    if (raw_byte) {
      out->push_back(static_cast<char>(cp));
    } else {
      AppendUtf8(cp, out);
    }
  }

  // At a backslash: one escape. \xHH is a raw byte inside literals.
  Status ReadEscape(uint32_t* cp, bool* raw_byte) {
    ++pos_;
    if (pos_ >= text_.size()) return Error("a lone '\\' at the end");
    const char e = text_[pos_++];
    auto hex = [&](int digits) -> Status {
      uint32_t v = 0;
      for (int i = 0; i < digits; ++i) {
        const int d = pos_ < text_.size() ? tok::HexDigit(text_[pos_]) : -1;
        if (d < 0) return Error(fmt::format("expected {} hex digits", digits));
        ++pos_;
        v = v * 16 + static_cast<uint32_t>(d);
      }
      *cp = v;
      return OkStatus();
    };
    switch (e) {
      case 'n': *cp = '\n'; return OkStatus();
      case 'r': *cp = '\r'; return OkStatus();
      case 't': *cp = '\t'; return OkStatus();
      case 'f': *cp = '\f'; return OkStatus();
      case 'v': *cp = '\v'; return OkStatus();
      case '0': *cp = 0; return OkStatus();
      case 'x':
        *raw_byte = true;
        return hex(2);
      case 'u': return hex(4);
      case 'U': {
        TSR_RETURN_IF_ERROR(hex(8));
        if (*cp > 0x10FFFF) return Error("a \\U escape beyond U+10FFFF");
        return OkStatus();
      }
      default:
        *cp = static_cast<unsigned char>(e);
        return OkStatus();
    }
  }

  // One code point of a class (UTF-8 decoded), or an escape.
  Status ReadClassChar(uint32_t* cp) {
    if (text_[pos_] == '\\') {
      bool raw = false;
      return ReadEscape(cp, &raw);
    }
    const tok::Utf8Sequence seq = tok::ReadUtf8(text_, pos_);
    if (seq.kind != tok::Utf8Sequence::kValid) {
      return Error("invalid UTF-8 in a character class");
    }
    pos_ += seq.length;
    const uint32_t v = seq.code_point;
    *cp = v;
    return OkStatus();
  }

  Status ParseClass(Sequence* item) {
    ++pos_;  // [
    bool negated = false;
    if (pos_ < text_.size() && text_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    CodepointRanges ranges;
    while (true) {
      if (pos_ >= text_.size()) return Error("unterminated character class");
      if (text_[pos_] == ']') {
        ++pos_;
        break;
      }
      uint32_t lo = 0;
      TSR_RETURN_IF_ERROR(ReadClassChar(&lo));
      uint32_t hi = lo;
      if (pos_ + 1 < text_.size() && text_[pos_] == '-' &&
          text_[pos_ + 1] != ']') {
        ++pos_;
        TSR_RETURN_IF_ERROR(ReadClassChar(&hi));
        if (hi < lo) return Error("a class range runs backwards");
      }
      ranges.emplace_back(lo, hi);
    }
    // A class of bytes < 0x80 only is one symbol; others need a rule.
    bool ascii = !negated;
    for (auto [lo, hi] : ranges) ascii = ascii && hi < 0x80;
    if (ascii) {
      ByteSet set;
      for (auto [lo, hi] : ranges) {
        for (uint32_t b = lo; b <= hi; ++b) set.set(b);
      }
      if (set.none()) return Error("an empty character class");
      item->push_back(SetSymbol(set));
    } else {
      item->push_back(RuleSymbol(g_->AddCodepointClass(ranges, negated)));
    }
    return OkStatus();
  }

  std::string_view text_;
  size_t pos_ = 0;
  Grammar* g_ = nullptr;
  std::map<std::string, int32_t> rule_index_;
  std::map<std::string, bool> defined_;
};

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> ParseEbnf(std::string_view text,
                                                   std::string_view root_rule) {
  if (text.size() > kMaxGrammarTextBytes) {
    return InvalidArgumentError(fmt::format(
        "grammar: {} bytes; at most {} are accepted", text.size(),
        kMaxGrammarTextBytes));
  }
  return Parser(text).Parse(root_rule);
}

}  // namespace tessera::grammar
