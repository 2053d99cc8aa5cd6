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
#include <string>
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

  // For token masks (token_mask.h). While a floor is set, items built
  // above it that derive from items which started below it (read by a
  // completion) are "tainted": they exist only because of that context.
  // A byte scanned only by tainted items makes the position depend on the
  // context (DependsOnContext); a byte refused where tainted items could
  // scan might be taken in another context (RefusalDependsOnContext).
  // A completion above the floor of a rule N with origin o below it is not
  // tainting when the floor set itself completed N from o: it reads the
  // same items of set o the floor's closure read (a left-recursive
  // repetition, e.g. the characters of a JSON string, completes its rule
  // from the repetition's start at every position), and StateKey records
  // what those reads give.
  // Untainted items derive from the item set at the floor alone, so two
  // states with equal StateKey answer alike for every token whose walk
  // depends on neither. ClearFloor ends the tracking.
  void SetFloor();
  void ClearFloor() {
    floor_ = 0;
    floor_completed_.clear();
  }
  bool DependsOnContext() const { return sets_.back().below_floor; }
  bool RefusalDependsOnContext() const;
  // The current item set's items that still expect something, with
  // origins reduced to "here" or the rank of their position among the
  // set's earlier origins, and for each rule the set completed from an
  // earlier origin, what that completion read there (the same reduction).
  std::string StateKey() const;
  // The current item set's items that still expect something, with
  // earlier origins kept as positions (completed items are never read
  // again: later completions read the items that wait for a rule). Bytes
  // below the current position never change (decoding only appends), so
  // two positions of one matcher with equal ExactStateKey answer alike for
  // every byte string: what completions read below is the same history.
  std::string ExactStateKey() const;

  // Token masks' per-matcher memory (token_mask.h): the context-dependent
  // ids allowed at an ExactStateKey seen before (e.g. every character of
  // one JSON string value has the same key). Bounded; cleared when full.
  struct DependentAnswers {
    std::vector<int32_t> allowed;
    size_t position = 0;  // where it was computed (a Rollback below drops it)
  };
  const DependentAnswers* FindDependent(const std::string& exact_key) const;
  void RememberDependent(std::string exact_key, DependentAnswers answers);

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
    std::vector<uint8_t> tainted;  // per item (see SetFloor)
    // Open-addressing hash of item indices for de-duplication.
    std::vector<int32_t> slots;
    bool below_floor = false;
  };

  const Sequence& SequenceOf(const Item& item) const {
    return grammar_->rules[static_cast<size_t>(item.rule)]
        .alternatives[static_cast<size_t>(item.alt)];
  }
  static uint64_t Hash(const Item& item);
  // Adds `item` to `set` unless present; an untainted copy of a tainted
  // item clears its taint.
  static void Add(ItemSet& set, const Item& item, bool tainted = false);
  // Prediction and completion over set `k` until nothing changes.
  void Close(size_t k);

  // An emptied set whose buffers are reused (rolled-back positions keep
  // their capacity: a mask walk pushes and pops millions of sets).
  ItemSet TakeSpare();

  std::shared_ptr<const Grammar> grammar_;
  std::vector<ItemSet> sets_;
  std::vector<ItemSet> spare_;
  size_t floor_ = 0;
  // (rule, origin) pairs the floor set completed from below it (sorted).
  std::vector<std::pair<int32_t, int32_t>> floor_completed_;
  std::vector<std::pair<std::string, DependentAnswers>> dependent_answers_;
};

}  // namespace tessera::grammar

#endif  // TESSERA_GRAMMAR_EARLEY_MATCHER_H_
