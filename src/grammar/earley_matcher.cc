#include "grammar/earley_matcher.h"

#include <algorithm>
#include <utility>

namespace tessera::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)) {
  sets_.emplace_back();
  const Rule& root = grammar_->rules[static_cast<size_t>(grammar_->root)];
  for (size_t a = 0; a < root.alternatives.size(); ++a) {
    Add(sets_[0], Item{grammar_->root, static_cast<int32_t>(a), 0, 0});
  }
  Close(0);
}

uint64_t GrammarMatcher::Hash(const Item& item) {
  uint64_t h = static_cast<uint32_t>(item.rule);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(item.alt);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(item.dot);
  h = h * 0x9E3779B97F4A7C15ull + static_cast<uint32_t>(item.origin);
  return h ^ (h >> 29);
}

void GrammarMatcher::Add(ItemSet& set, const Item& item, bool tainted) {
  if (set.slots.size() < 2 * (set.items.size() + 1)) {
    // Grow (power of two) and rehash.
    size_t size = 16;
    while (size < 4 * (set.items.size() + 1)) size *= 2;
    set.slots.assign(size, -1);
    for (size_t i = 0; i < set.items.size(); ++i) {
      size_t slot = Hash(set.items[i]) & (size - 1);
      while (set.slots[slot] >= 0) slot = (slot + 1) & (size - 1);
      set.slots[slot] = static_cast<int32_t>(i);
    }
  }
  const size_t mask = set.slots.size() - 1;
  size_t slot = Hash(item) & mask;
  while (set.slots[slot] >= 0) {
    const size_t index = static_cast<size_t>(set.slots[slot]);
    if (set.items[index] == item) {
      if (!tainted) set.tainted[index] = 0;
      return;
    }
    slot = (slot + 1) & mask;
  }
  set.slots[slot] = static_cast<int32_t>(set.items.size());
  set.items.push_back(item);
  set.tainted.push_back(tainted ? 1 : 0);
}

void GrammarMatcher::Close(size_t k) {
  // Items are appended while we walk; index-based on purpose.
  for (size_t i = 0; i < sets_[k].items.size(); ++i) {
    const Item item = sets_[k].items[i];
    const bool tainted = sets_[k].tainted[i] != 0;
    const Sequence& seq = SequenceOf(item);
    if (static_cast<size_t>(item.dot) == seq.size()) {
      // Completion: advance whatever waited for item.rule at its origin.
      const size_t origin = static_cast<size_t>(item.origin);
      const bool below =
          origin < floor_ &&
          !std::binary_search(floor_completed_.begin(), floor_completed_.end(),
                              std::make_pair(item.rule, item.origin));
      for (size_t j = 0; j < sets_[origin].items.size(); ++j) {
        const Item waiting = sets_[origin].items[j];
        const Sequence& ws = SequenceOf(waiting);
        if (static_cast<size_t>(waiting.dot) < ws.size() &&
            ws[static_cast<size_t>(waiting.dot)].rule == item.rule) {
          Add(sets_[k],
              Item{waiting.rule, waiting.alt, waiting.dot + 1, waiting.origin},
              below || tainted || sets_[origin].tainted[j] != 0);
        }
      }
      continue;
    }
    const Symbol& next = seq[static_cast<size_t>(item.dot)];
    if (!next.is_rule()) continue;  // waits for a byte
    const Rule& rule = grammar_->rules[static_cast<size_t>(next.rule)];
    for (size_t a = 0; a < rule.alternatives.size(); ++a) {
      Add(sets_[k],
          Item{next.rule, static_cast<int32_t>(a), 0, static_cast<int32_t>(k)},
          tainted);
    }
    if (grammar_->nullable[static_cast<size_t>(next.rule)]) {
      Add(sets_[k], Item{item.rule, item.alt, item.dot + 1, item.origin},
          tainted);
    }
  }
}

bool GrammarMatcher::Accept(uint8_t byte) {
  const size_t k = sets_.size() - 1;
  ItemSet next = TakeSpare();
  bool untainted_scan = false;
  const ItemSet& current = sets_[k];
  for (size_t i = 0; i < current.items.size(); ++i) {
    const Item& item = current.items[i];
    const Sequence& seq = SequenceOf(item);
    if (static_cast<size_t>(item.dot) >= seq.size()) continue;
    const Symbol& s = seq[static_cast<size_t>(item.dot)];
    if (!s.is_rule() && s.bytes.test(byte)) {
      const bool tainted = current.tainted[i] != 0;
      untainted_scan = untainted_scan || !tainted;
      Add(next, Item{item.rule, item.alt, item.dot + 1, item.origin}, tainted);
    }
  }
  if (next.items.empty()) {
    spare_.push_back(std::move(next));
    return false;
  }
  next.below_floor =
      floor_ > 0 && (!untainted_scan || (k > floor_ && current.below_floor));
  sets_.push_back(std::move(next));
  Close(k + 1);
  return true;
}

GrammarMatcher::ItemSet GrammarMatcher::TakeSpare() {
  if (spare_.empty()) return ItemSet{};
  ItemSet set = std::move(spare_.back());
  spare_.pop_back();
  set.items.clear();
  set.tainted.clear();
  std::fill(set.slots.begin(), set.slots.end(), -1);
  set.below_floor = false;
  return set;
}

bool GrammarMatcher::RefusalDependsOnContext() const {
  const ItemSet& current = sets_.back();
  for (size_t i = 0; i < current.items.size(); ++i) {
    if (!current.tainted[i]) continue;
    const Sequence& seq = SequenceOf(current.items[i]);
    const size_t dot = static_cast<size_t>(current.items[i].dot);
    if (dot < seq.size() && !seq[dot].is_rule()) return true;
  }
  return false;
}

bool GrammarMatcher::AcceptString(std::string_view bytes) {
  size_t done = 0;
  for (char c : bytes) {
    if (!Accept(static_cast<uint8_t>(c))) {
      Rollback(done);
      return false;
    }
    ++done;
  }
  return true;
}

void GrammarMatcher::Rollback(size_t n) {
  if (n > position()) n = position();
  for (size_t i = 0; i < n; ++i) {
    spare_.push_back(std::move(sets_.back()));
    sets_.pop_back();
  }
  // Answers computed above the new position may rest on bytes that are
  // gone (a mask walk only rolls back to where they were computed).
  if (!dependent_answers_.empty() &&
      dependent_answers_.back().second.position > position()) {
    std::erase_if(dependent_answers_, [this](const auto& entry) {
      return entry.second.position > position();
    });
  }
}

void GrammarMatcher::SetFloor() {
  floor_ = position();
  floor_completed_.clear();
  for (const Item& item : sets_.back().items) {
    if (static_cast<size_t>(item.dot) == SequenceOf(item).size() &&
        static_cast<size_t>(item.origin) < floor_) {
      floor_completed_.emplace_back(item.rule, item.origin);
    }
  }
  std::sort(floor_completed_.begin(), floor_completed_.end());
  floor_completed_.erase(
      std::unique(floor_completed_.begin(), floor_completed_.end()),
      floor_completed_.end());
}

std::string GrammarMatcher::StateKey() const {
  const size_t k = position();
  const ItemSet& set = sets_.back();
  // Earlier origins, ranked (two states match when their items share
  // origins the same way, whatever the positions).
  std::vector<int32_t> origins;
  for (const Item& item : set.items) {
    if (static_cast<size_t>(item.origin) != k) origins.push_back(item.origin);
  }
  std::sort(origins.begin(), origins.end());
  origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
  auto label = [&](int32_t origin) -> uint64_t {
    if (static_cast<size_t>(origin) == k) return 0;
    auto it = std::lower_bound(origins.begin(), origins.end(), origin);
    // (a read item's origin outside the set's: its own large label)
    return it != origins.end() && *it == origin
               ? 1 + static_cast<uint64_t>(it - origins.begin())
               : 0xFFFFFull;
  };
  auto encode = [&](const Item& item) {
    return (static_cast<uint64_t>(item.rule) << 44) ^
           (static_cast<uint64_t>(item.alt) << 30) ^
           (static_cast<uint64_t>(item.dot) << 20) ^ label(item.origin);
  };
  std::vector<uint64_t> pending;
  std::vector<std::pair<int32_t, int32_t>> completed;
  for (const Item& item : set.items) {
    if (static_cast<size_t>(item.dot) < SequenceOf(item).size()) {
      pending.push_back(encode(item));
    } else if (static_cast<size_t>(item.origin) < k) {
      completed.emplace_back(item.rule, item.origin);
    }
  }
  std::sort(pending.begin(), pending.end());
  pending.erase(std::unique(pending.begin(), pending.end()), pending.end());
  std::sort(completed.begin(), completed.end());
  completed.erase(std::unique(completed.begin(), completed.end()),
                  completed.end());
  std::vector<uint64_t> key = std::move(pending);
  for (const auto& [rule, origin] : completed) {
    // What a completion of `rule` from `origin` reads there.
    key.push_back(~uint64_t{0});
    key.push_back((static_cast<uint64_t>(rule) << 20) ^ label(origin));
    std::vector<uint64_t> read;
    for (const Item& waiting : sets_[static_cast<size_t>(origin)].items) {
      const Sequence& ws = SequenceOf(waiting);
      if (static_cast<size_t>(waiting.dot) < ws.size() &&
          ws[static_cast<size_t>(waiting.dot)].rule == rule) {
        read.push_back(encode(waiting));
      }
    }
    std::sort(read.begin(), read.end());
    key.insert(key.end(), read.begin(), read.end());
  }
  return std::string(reinterpret_cast<const char*>(key.data()),
                     key.size() * sizeof(uint64_t));
}

std::string GrammarMatcher::ExactStateKey() const {
  const size_t k = position();
  std::vector<std::pair<uint64_t, uint64_t>> keys;
  keys.reserve(sets_.back().items.size());
  for (const Item& item : sets_.back().items) {
    if (static_cast<size_t>(item.dot) == SequenceOf(item).size()) continue;
    const uint64_t origin = static_cast<size_t>(item.origin) == k
                                ? ~uint64_t{0}
                                : static_cast<uint64_t>(item.origin);
    keys.emplace_back((static_cast<uint64_t>(item.rule) << 40) ^
                          (static_cast<uint64_t>(item.alt) << 22) ^
                          (static_cast<uint64_t>(item.dot) << 1),
                      origin);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return std::string(reinterpret_cast<const char*>(keys.data()),
                     keys.size() * sizeof(keys[0]));
}

const GrammarMatcher::DependentAnswers* GrammarMatcher::FindDependent(
    const std::string& exact_key) const {
  for (const auto& [key, answers] : dependent_answers_) {
    if (key == exact_key) return &answers;
  }
  return nullptr;
}

void GrammarMatcher::RememberDependent(std::string exact_key,
                                       DependentAnswers answers) {
  // A few recent states are what repeats (the characters of one string);
  // a handful of entries bounds the memory of a long output.
  constexpr size_t kMaxRemembered = 8;
  if (dependent_answers_.size() >= kMaxRemembered) {
    dependent_answers_.erase(dependent_answers_.begin());
  }
  answers.position = position();
  dependent_answers_.emplace_back(std::move(exact_key), std::move(answers));
}

bool GrammarMatcher::CanEnd() const {
  for (const Item& item : sets_.back().items) {
    if (item.rule == grammar_->root && item.origin == 0 &&
        static_cast<size_t>(item.dot) == SequenceOf(item).size()) {
      return true;
    }
  }
  return false;
}

bool GrammarMatcher::CanContinue() const {
  for (const Item& item : sets_.back().items) {
    const Sequence& seq = SequenceOf(item);
    if (static_cast<size_t>(item.dot) < seq.size() &&
        !seq[static_cast<size_t>(item.dot)].is_rule()) {
      return true;
    }
  }
  return false;
}

}  // namespace tessera::grammar
