#include "grammar/grammar.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/utf8.h"

namespace tessera::grammar {
namespace {

constexpr uint32_t kMaxCodepoint = 0x10FFFF;

int Utf8Length(uint32_t cp) {
  if (cp <= 0x7F) return 1;
  if (cp <= 0x7FF) return 2;
  if (cp <= 0xFFFF) return 3;
  return 4;
}

void Encode(uint32_t cp, uint8_t* out) {
  std::string bytes;
  AppendUtf8(cp, &bytes);
  for (size_t i = 0; i < bytes.size(); ++i) out[i] = static_cast<uint8_t>(bytes[i]);
}

// Splits [lo, hi] (one encoded length, no surrogates) into byte-range
// sequences: each output is a list of per-byte ranges whose product is
// exactly a sub-range of code points.
void SplitUtf8(uint32_t lo, uint32_t hi,
               std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  if (lo > hi) return;
  for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= boundary && boundary < hi) {
      SplitUtf8(lo, boundary, out);
      SplitUtf8(boundary + 1, hi, out);
      return;
    }
  }
  const int n = Utf8Length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t mask = (1u << (6 * i)) - 1;
    if ((lo & ~mask) != (hi & ~mask)) {
      if ((lo & mask) != 0) {
        SplitUtf8(lo, lo | mask, out);
        SplitUtf8((lo | mask) + 1, hi, out);
        return;
      }
      if ((hi & mask) != mask) {
        SplitUtf8(lo, (hi & ~mask) - 1, out);
        SplitUtf8(hi & ~mask, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  Encode(lo, a);
  Encode(hi, b);
  std::vector<std::pair<uint8_t, uint8_t>> ranges;
  for (int i = 0; i < n; ++i) ranges.emplace_back(a[i], b[i]);
  out->push_back(std::move(ranges));
}

// Sorted, merged, clipped to valid code points minus surrogates.
CodepointRanges Normalize(CodepointRanges ranges) {
  std::sort(ranges.begin(), ranges.end());
  CodepointRanges merged;
  for (auto [lo, hi] : ranges) {
    hi = std::min(hi, kMaxCodepoint);
    if (lo > hi) continue;
    if (!merged.empty() && lo <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, hi);
    } else {
      merged.emplace_back(lo, hi);
    }
  }
  CodepointRanges out;
  for (auto [lo, hi] : merged) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.emplace_back(lo, hi);
      continue;
    }
    if (lo < 0xD800) out.emplace_back(lo, 0xD7FF);
    if (hi > 0xDFFF) out.emplace_back(0xE000, hi);
  }
  return out;
}

std::string ByteSetText(const ByteSet& set) {
  if (set.count() == 1) {
    for (int b = 0; b < 256; ++b) {
      if (!set.test(b)) continue;
      if (b >= 0x20 && b < 0x7F && b != '"' && b != '\\') {
        return fmt::format("\"{}\"", static_cast<char>(b));
      }
      return fmt::format("\"\\x{:02X}\"", b);
    }
  }
  std::string out = "[";
  for (int b = 0; b < 256;) {
    if (!set.test(b)) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && set.test(e + 1)) ++e;
    auto one = [](int c) {
      return (c >= 0x30 && c < 0x7B && std::isalnum(c))
                 ? std::string(1, static_cast<char>(c))
                 : fmt::format("\\x{:02X}", c);
    };
    out += one(b);
    if (e > b) out += "-" + one(e);
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

void AppendLiteral(std::string_view text, Sequence* sequence) {
  for (char c : text) sequence->push_back(ByteSymbol(static_cast<uint8_t>(c)));
}

int32_t Grammar::AddRule(std::string name) {
  rules.push_back(Rule{std::move(name), {}});
  return static_cast<int32_t>(rules.size() - 1);
}

void Grammar::AddAlternative(int32_t rule, Sequence sequence) {
  symbols_ += sequence.size() + 1;
  rules[static_cast<size_t>(rule)].alternatives.push_back(std::move(sequence));
}

int32_t Grammar::FindRule(const std::string& name) const {
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].name == name) return static_cast<int32_t>(i);
  }
  return -1;
}

int32_t Grammar::AddStar(const Sequence& item) {
  // R ::= R item | ""  (left recursion: Earley keeps one item
  // "R -> R . item" with the repetition's start as its origin, so each
  // position's item set stays the same size however long the repetition
  // runs, and every position inside it has the same state. Right recursion
  // would add a completed item per earlier repetition at every position.)
  const int32_t r = AddRule(fmt::format("star_{}", rules.size()));
  Sequence more = {RuleSymbol(r)};
  more.insert(more.end(), item.begin(), item.end());
  AddAlternative(r, std::move(more));
  AddAlternative(r, {});
  return r;
}

int32_t Grammar::AddPlus(const Sequence& item) {
  const int32_t star = AddStar(item);
  const int32_t r = AddRule(fmt::format("plus_{}", rules.size()));
  Sequence seq = item;
  seq.push_back(RuleSymbol(star));
  AddAlternative(r, std::move(seq));
  return r;
}

int32_t Grammar::AddOptional(const Sequence& item) {
  const int32_t r = AddRule(fmt::format("opt_{}", rules.size()));
  AddAlternative(r, item);
  AddAlternative(r, {});
  return r;
}

StatusOr<int32_t> Grammar::AddRepeat(const Sequence& item, int64_t min,
                                     int64_t max) {
  if (min < 0 || (max >= 0 && max < min)) {
    return InvalidArgumentError(
        fmt::format("repetition {{{},{}}}: the bounds are out of order", min,
                    max));
  }
  const int64_t copies = max >= 0 ? max : min + 1;
  if (static_cast<size_t>(copies) * (item.size() + 2) + symbols_ >
      kMaxSymbols) {
    return InvalidArgumentError(fmt::format(
        "repetition {{{},{}}} makes the grammar larger than {} symbols",
        min, max, kMaxSymbols));
  }
  // tail: what may follow the mandatory copies.
  Sequence tail;
  if (max < 0) {
    tail.push_back(RuleSymbol(AddStar(item)));
  } else if (max > min) {
    // opt_k ::= item opt_{k-1} | ""  (k optional copies, nested)
    int32_t inner = -1;
    for (int64_t k = 0; k < max - min; ++k) {
      Sequence seq = item;
      if (inner >= 0) seq.push_back(RuleSymbol(inner));
      inner = AddOptional(seq);
    }
    tail.push_back(RuleSymbol(inner));
  }
  const int32_t r = AddRule(fmt::format("rep_{}", rules.size()));
  Sequence seq;
  for (int64_t k = 0; k < min; ++k) seq.insert(seq.end(), item.begin(), item.end());
  seq.insert(seq.end(), tail.begin(), tail.end());
  AddAlternative(r, std::move(seq));
  return r;
}

int32_t Grammar::AddCodepointClass(const CodepointRanges& ranges,
                                   bool negated) {
  CodepointRanges set = Normalize(ranges);
  if (negated) {
    CodepointRanges complement;
    uint32_t next = 0;
    for (auto [lo, hi] : set) {
      if (lo > next) complement.emplace_back(next, lo - 1);
      next = hi + 1;
    }
    if (next <= kMaxCodepoint) complement.emplace_back(next, kMaxCodepoint);
    set = Normalize(complement);
  }
  const int32_t r = AddRule(fmt::format("class_{}", rules.size()));
  // One-byte code points share a single symbol.
  ByteSet ascii;
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> sequences;
  for (auto [lo, hi] : set) SplitUtf8(lo, hi, &sequences);
  for (const auto& byte_ranges : sequences) {
    if (byte_ranges.size() == 1) {
      for (int b = byte_ranges[0].first; b <= byte_ranges[0].second; ++b) {
        ascii.set(static_cast<size_t>(b));
      }
      continue;
    }
    Sequence seq;
    for (auto [lo, hi] : byte_ranges) {
      ByteSet bytes;
      for (int b = lo; b <= hi; ++b) bytes.set(static_cast<size_t>(b));
      seq.push_back(SetSymbol(bytes));
    }
    AddAlternative(r, std::move(seq));
  }
  if (ascii.any()) AddAlternative(r, {SetSymbol(ascii)});
  return r;
}

Status Grammar::Finalize() {
  if (root < 0 || static_cast<size_t>(root) >= rules.size()) {
    return InvalidArgumentError("the grammar has no root rule");
  }
  if (symbols_ > kMaxSymbols) {
    return InvalidArgumentError(fmt::format(
        "the grammar has {} symbols; at most {} are allowed", symbols_,
        kMaxSymbols));
  }
  for (const Rule& rule : rules) {
    if (rule.alternatives.empty()) {
      return InvalidArgumentError(fmt::format(
          "rule '{}' matches nothing (an empty character class?)",
          rule.name));
    }
    for (const Sequence& seq : rule.alternatives) {
      for (const Symbol& s : seq) {
        if (s.is_rule() && static_cast<size_t>(s.rule) >= rules.size()) {
          return InvalidArgumentError(
              fmt::format("rule '{}' refers to a missing rule", rule.name));
        }
        if (!s.is_rule() && s.bytes.none()) {
          return InvalidArgumentError(fmt::format(
              "rule '{}' has an empty character class", rule.name));
        }
      }
    }
  }
  nullable.assign(rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules.size(); ++r) {
      if (nullable[r]) continue;
      for (const Sequence& seq : rules[r].alternatives) {
        bool all = true;
        for (const Symbol& s : seq) {
          all = all && s.is_rule() && nullable[static_cast<size_t>(s.rule)];
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return OkStatus();
}

std::string Grammar::ToString() const {
  std::string out;
  for (size_t r = 0; r < rules.size(); ++r) {
    out += rules[r].name + " ::=";
    for (size_t a = 0; a < rules[r].alternatives.size(); ++a) {
      if (a > 0) out += " |";
      if (rules[r].alternatives[a].empty()) out += " \"\"";
      for (const Symbol& s : rules[r].alternatives[a]) {
        out += " ";
        out += s.is_rule() ? rules[static_cast<size_t>(s.rule)].name
                           : ByteSetText(s.bytes);
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace tessera::grammar
