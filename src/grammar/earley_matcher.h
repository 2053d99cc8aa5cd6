// GrammarMatcher: where a byte string stands in a Grammar (grammar.h), one
// byte at a time, with rollback — the state behind constrained decoding.
//
// An Earley recognizer over bytes: one item set per input position (item =
// rule, alternative, dot, origin), built by prediction (with the
// Aycock–Horspool step for nullable rules), scanning and completion, so any
// context-free grammar works, left recursion included. Accept(b) adds one
// position or refuses the byte leaving the state as it was; Rollback(n)
// drops the last n positions, which is how a token mask tries every token's
// bytes from the committed state (token_mask.h).
//
// Cost: a byte costs O(items in the new set x completions); memory grows by
// one item set per accepted byte (a request's output, some KB).
// Not thread-safe: one matcher per sequence, used by the scheduler thread.
#ifndef TESSERA_GRAMMAR_EARLEY_MATCHER_H_
#define TESSERA_GRAMMAR_EARLEY_MATCHER_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace tessera::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // Advances by `byte`; false (state unchanged) when the grammar does not
  // allow it here.
  bool Accept(uint8_t byte);
  // Accepts every byte or none (all-or-nothing).
  bool AcceptString(std::string_view bytes);
  // Drops the last `n` accepted bytes (n <= position()).
  void Rollback(size_t n);

  // Bytes accepted so far.
  size_t position() const { return sets_.size() - 1; }
  // The input so far is a whole sentence of the grammar.
  bool CanEnd() const;
  // Some byte may still follow (false: the grammar is finished here).
  bool CanContinue() const;

  const Grammar& grammar() const { return *grammar_; }

 private:
  struct Item {
    int32_t rule;
    int32_t alt;
    int32_t dot;
    int32_t origin;
    bool operator==(const Item& o) const {
      return rule == o.rule && alt == o.alt && dot == o.dot &&
             origin == o.origin;
    }
  };
  struct ItemSet {
    std::vector<Item> items;
    // Open-addressing hash of item indices for de-duplication.
    std::vector<int32_t> slots;
  };

  const Sequence& SequenceOf(const Item& item) const {
    return grammar_->rules[static_cast<size_t>(item.rule)]
        .alternatives[static_cast<size_t>(item.alt)];
  }
  static uint64_t Hash(const Item& item);
  // Adds `item` to `set` unless present.
  static void Add(ItemSet& set, const Item& item);
  // Prediction and completion over set `k` until nothing changes.
  void Close(size_t k);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<ItemSet> sets_;
};

}  // namespace tessera::grammar

#endif  // TESSERA_GRAMMAR_EARLEY_MATCHER_H_
