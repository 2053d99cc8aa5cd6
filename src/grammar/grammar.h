// A context-free grammar over bytes: what constrained decoding (structured
// output) makes the model's output obey. Built by the EBNF parser (ebnf.h),
// to which regular expressions (regex_to_ebnf.h) and JSON Schemas
// (json_schema_to_ebnf.h) are first translated; run by the Earley matcher
// (earley_matcher.h).
//
// Shape: rules[r].alternatives[a] is a sequence of symbols; a symbol is
// either a set of bytes (one input byte from the set) or a reference to a
// rule. An empty sequence matches the empty string. Text is UTF-8: a
// character class over code points becomes a rule whose alternatives are
// the UTF-8 byte sequences of its ranges (AddCodepointClass).
//
// Invariants after Finalize: every referenced rule exists and has at least
// one alternative; `nullable[r]` says whether rule r derives the empty
// string; the grammar's size is bounded (kMaxSymbols). Immutable after
// Finalize; shared between requests as a const shared_ptr (thread-safe).
#ifndef TESSERA_GRAMMAR_GRAMMAR_H_
#define TESSERA_GRAMMAR_GRAMMAR_H_

#include <bitset>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tessera::grammar {

using ByteSet = std::bitset<256>;

struct Symbol {
  int32_t rule = -1;  // >= 0: a rule reference; -1: the byte set below
  ByteSet bytes;
  bool is_rule() const { return rule >= 0; }
};

using Sequence = std::vector<Symbol>;

struct Rule {
  std::string name;
  std::vector<Sequence> alternatives;
};

// Token masks already computed for a grammar, by matcher state
// (GrammarMatcher::StateKey): the tokens allowed whatever came before, and
// the tokens whose answer depends on it (token_mask.h recomputes those).
// Tied to the first vocabulary that uses it. Thread-safe.
struct MaskCacheEntry {
  std::vector<uint64_t> allowed;   // bit per token id
  std::vector<int32_t> dependent;  // in the vocabulary's byte order
};

class MaskCache {
 public:
  // Bytes of masks kept per grammar (a Qwen3-sized entry is ~20-30 KB, so
  // some 150 grammar states); beyond it masks are computed, not cached.
  static constexpr size_t kMaxBytes = size_t{4} << 20;

  std::shared_ptr<const MaskCacheEntry> Find(const void* vocab,
                                             const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (vocab != vocab_) return nullptr;
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second;
  }
  void Insert(const void* vocab, std::string key,
              std::shared_ptr<const MaskCacheEntry> entry) {
    std::lock_guard<std::mutex> lock(mu_);
    if (vocab_ == nullptr) vocab_ = vocab;
    const size_t bytes = key.size() + entry->allowed.size() * 8 +
                         entry->dependent.size() * 4;
    if (vocab != vocab_ || bytes_ + bytes > kMaxBytes) return;
    if (entries_.emplace(std::move(key), std::move(entry)).second) {
      bytes_ += bytes;
    }
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  mutable std::mutex mu_;
  const void* vocab_ = nullptr;  // guarded by mu_
  size_t bytes_ = 0;             // guarded by mu_
  std::unordered_map<std::string, std::shared_ptr<const MaskCacheEntry>>
      entries_;  // guarded by mu_
};

// Code-point ranges, inclusive.
using CodepointRanges = std::vector<std::pair<uint32_t, uint32_t>>;

class Grammar {
 public:
  // Most symbols in all alternatives together: bounds the work a request's
  // grammar may cost (a {1000,100000} repeat is refused, not expanded).
  static constexpr size_t kMaxSymbols = 50000;

  int32_t AddRule(std::string name);
  void AddAlternative(int32_t rule, Sequence sequence);
  // Index of the rule named `name`, or -1.
  int32_t FindRule(const std::string& name) const;

  // Helpers that add rules for the usual operators over `item` (a sequence)
  // and return the new rule: item*, item+, item?, item{min,max} (max < 0:
  // unbounded).
  int32_t AddStar(const Sequence& item);
  int32_t AddPlus(const Sequence& item);
  int32_t AddOptional(const Sequence& item);
  StatusOr<int32_t> AddRepeat(const Sequence& item, int64_t min, int64_t max);
  // A rule matching one UTF-8 encoded code point in `ranges` (or, negated,
  // any valid code point outside them).
  int32_t AddCodepointClass(const CodepointRanges& ranges, bool negated);

  // Checks references and size, computes `nullable`. `root` must be set.
  Status Finalize();

  // For diagnostics and tests: the grammar in EBNF-like text.
  std::string ToString() const;

  std::vector<Rule> rules;
  int32_t root = -1;
  std::vector<bool> nullable;  // per rule, after Finalize
  // Shared by every request using this grammar (contents are mutable).
  std::shared_ptr<MaskCache> mask_cache = std::make_shared<MaskCache>();

 private:
  size_t symbols_ = 0;
};

inline Symbol ByteSymbol(uint8_t byte) {
  Symbol s;
  s.bytes.set(byte);
  return s;
}
inline Symbol SetSymbol(const ByteSet& bytes) {
  Symbol s;
  s.bytes = bytes;
  return s;
}
inline Symbol RuleSymbol(int32_t rule) {
  Symbol s;
  s.rule = rule;
  return s;
}

// Appends the bytes of `text` as byte symbols.
void AppendLiteral(std::string_view text, Sequence* sequence);

}  // namespace tessera::grammar

#endif  // TESSERA_GRAMMAR_GRAMMAR_H_
