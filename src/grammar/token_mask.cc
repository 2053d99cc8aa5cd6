#include "grammar/token_mask.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/byte_level.h"

namespace tessera::grammar {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

}  // namespace

std::shared_ptr<const TokenVocabulary> TokenVocabulary::FromBytes(
    std::vector<std::string> bytes) {
  auto v = std::make_shared<TokenVocabulary>();
  v->bytes_ = std::move(bytes);
  for (size_t id = 0; id < v->bytes_.size(); ++id) {
    if (!v->bytes_[id].empty()) v->sorted_.push_back(static_cast<int32_t>(id));
  }
  std::sort(v->sorted_.begin(), v->sorted_.end(), [&](int32_t a, int32_t b) {
    return v->bytes_[static_cast<size_t>(a)] < v->bytes_[static_cast<size_t>(b)];
  });
  return v;
}

std::shared_ptr<const TokenVocabulary> TokenVocabulary::Build(
    const Tokenizer& tokenizer) {
  std::vector<std::string> bytes(static_cast<size_t>(tokenizer.vocab_size()));
  // A plain reference token before each id, so decoders that strip a
  // leading space (SentencePiece) decode the id as it reads mid-text.
  std::optional<int32_t> ref = tokenizer.TokenToId("a");
  if (!ref) ref = tokenizer.TokenToId("e");
  std::string ref_text;
  if (ref) {
    const int32_t one[] = {*ref};
    ref_text = tokenizer.Decode(one, false);
  }
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.IsSpecial(id)) continue;
    auto token = tokenizer.IdToToken(id);
    if (!token) continue;
    std::string& out = bytes[static_cast<size_t>(id)];
    if (uint8_t byte = 0; tok::ParseByteToken(*token, &byte)) {
      out = std::string(1, static_cast<char>(byte));
      continue;
    }
    std::string text;
    if (ref) {
      const int32_t two[] = {*ref, id};
      text = tokenizer.Decode(two, false);
      if (text.compare(0, ref_text.size(), ref_text) == 0) {
        text = text.substr(ref_text.size());
      } else {
        const int32_t alone[] = {id};
        text = tokenizer.Decode(alone, false);
      }
    } else {
      const int32_t alone[] = {id};
      text = tokenizer.Decode(alone, false);
    }
    if (text.find(kReplacement) != std::string::npos) {
      // Part of a UTF-8 character: the raw bytes of a byte-level token.
      std::string raw;
      if (tok::ByteLevelDecodeToken(*token, &raw)) text = std::move(raw);
    }
    out = std::move(text);
  }
  return FromBytes(std::move(bytes));
}

namespace {

// Tries `ids` (in byte order) from the matcher's state: sets allowed[id].
// With `dependent`, also lists the ids whose answer depended on context
// below the state (the matcher's floor must be set).
void Walk(GrammarMatcher& matcher, const TokenVocabulary& vocab,
          const std::vector<int32_t>& ids, std::vector<uint8_t>* allowed,
          std::vector<int32_t>* dependent) {
  const std::string* previous = nullptr;
  size_t accepted = 0;  // bytes of the previous token the matcher took
  size_t dead_at = std::string::npos;
  bool dead_dependent = false;
  for (int32_t id : ids) {
    const std::string& bytes = vocab.bytes(id);
    size_t common = 0;
    if (previous != nullptr) {
      const size_t limit = std::min(previous->size(), bytes.size());
      while (common < limit && (*previous)[common] == bytes[common]) ++common;
    }
    previous = &bytes;
    // Shares the refused prefix (through the refused byte): refused too.
    if (dead_at != std::string::npos && common > dead_at) {
      if (dead_dependent && dependent != nullptr) dependent->push_back(id);
      continue;
    }
    const size_t keep = std::min(common, accepted);
    matcher.Rollback(accepted - keep);
    accepted = keep;
    dead_at = std::string::npos;
    while (accepted < bytes.size()) {
      if (!matcher.Accept(static_cast<uint8_t>(bytes[accepted]))) {
        dead_at = accepted;
        break;
      }
      ++accepted;
    }
    bool depends = false;
    if (dead_at == std::string::npos) {
      (*allowed)[static_cast<size_t>(id)] = 1;
      depends = dependent != nullptr && matcher.DependsOnContext();
    } else {
      depends = dependent != nullptr && (matcher.DependsOnContext() ||
                                         matcher.RefusalDependsOnContext());
      dead_dependent = depends;
    }
    if (depends) dependent->push_back(id);
  }
  matcher.Rollback(accepted);
}

}  // namespace

int64_t ComputeTokenMask(GrammarMatcher& matcher, const TokenVocabulary& vocab,
                         std::span<const int32_t> stop_ids,
                         std::vector<uint8_t>* allowed) {
  allowed->assign(static_cast<size_t>(vocab.size()), 0);
  MaskCache& cache = *matcher.grammar().mask_cache;
  const std::string key = matcher.StateKey();
  std::shared_ptr<const MaskCacheEntry> entry = cache.Find(&vocab, key);
  if (entry != nullptr) {
    // Bits to bytes, 64 ids at a time (most words are all 0 or all 1).
    uint8_t* out = allowed->data();
    const size_t n = allowed->size();
    for (size_t w = 0; w < entry->allowed.size(); ++w) {
      const uint64_t bits = entry->allowed[w];
      const size_t base = w * 64;
      const size_t count = std::min<size_t>(64, n - base);
      if (bits == 0) continue;  // already zero
      if (bits == ~uint64_t{0} && count == 64) {
        std::memset(out + base, 1, 64);
        continue;
      }
      for (uint64_t b = bits; b != 0; b &= b - 1) {
        out[base + static_cast<size_t>(__builtin_ctzll(b))] = 1;
      }
    }
    // The context-dependent ids: remembered by this matcher for this exact
    // state (same history below), else walked and remembered.
    const std::string exact = matcher.ExactStateKey();
    if (const auto* known = matcher.FindDependent(exact)) {
      for (int32_t id : known->allowed) (*allowed)[static_cast<size_t>(id)] = 1;
    } else {
      Walk(matcher, vocab, entry->dependent, allowed, nullptr);
      GrammarMatcher::DependentAnswers answers;
      for (int32_t id : entry->dependent) {
        if ((*allowed)[static_cast<size_t>(id)]) answers.allowed.push_back(id);
      }
      matcher.RememberDependent(exact, std::move(answers));
    }
  } else {
    auto fresh = std::make_shared<MaskCacheEntry>();
    matcher.SetFloor();
    Walk(matcher, vocab, vocab.sorted(), allowed, &fresh->dependent);
    matcher.ClearFloor();
    fresh->allowed.assign((allowed->size() + 63) / 64, 0);
    for (size_t id = 0; id < allowed->size(); ++id) {
      if ((*allowed)[id]) fresh->allowed[id / 64] |= uint64_t{1} << (id % 64);
    }
    for (int32_t id : fresh->dependent) {
      fresh->allowed[static_cast<size_t>(id) / 64] &=
          ~(uint64_t{1} << (static_cast<size_t>(id) % 64));
    }
    cache.Insert(&vocab, key, std::move(fresh));
  }
  int64_t count = 0;
  if (entry != nullptr) {
    for (uint64_t w : entry->allowed) count += __builtin_popcountll(w);
    for (int32_t id : entry->dependent) count += (*allowed)[static_cast<size_t>(id)];
  } else {
    for (uint8_t a : *allowed) count += a;
  }
  // Stop ids end the output: allowed exactly when the grammar can end.
  const uint8_t can_end = matcher.CanEnd() ? 1 : 0;
  for (int32_t id : stop_ids) {
    if (id < 0 || id >= vocab.size()) continue;
    uint8_t& a = (*allowed)[static_cast<size_t>(id)];
    count += can_end - a;
    a = can_end;
  }
  return count;
}

}  // namespace tessera::grammar
