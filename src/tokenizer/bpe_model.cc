#include "tokenizer/bpe_model.h"

#include <fmt/format.h>

#include <queue>

#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
         static_cast<uint32_t>(right);
}

// One node of the doubly linked list of symbols of a word being merged.
struct Symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
  uint32_t len;  // bytes of the word covered; 0 once merged away
};

// A candidate merge of symbols[pos] with its successor.
struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  // Min-heap order: lowest rank first, then leftmost.
  bool operator>(const Candidate& o) const {
    return rank != o.rank ? rank > o.rank : pos > o.pos;
  }
};

}  // namespace

StatusOr<std::unique_ptr<BpeModel>> BpeModel::FromJson(const Json& model,
                                                       std::string_view where) {
  auto bpe = std::unique_ptr<BpeModel>(new BpeModel());

  const Json* vocab = FindField(model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) {
    return InvalidArgumentError(fmt::format(
        "{}.vocab: required object mapping token -> id is missing", where));
  }
  int64_t max_id = -1;
  bpe->vocab_.reserve(vocab->size());
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
        it->get<int64_t>() > kMaxTokenId) {
      return InvalidArgumentError(fmt::format(
          "{}.vocab[\"{}\"]: expected a token id in [0, {}], found {}", where,
          it.key(), kMaxTokenId, it->dump()));
    }
    const int64_t id = it->get<int64_t>();
    bpe->vocab_.emplace(it.key(), static_cast<int32_t>(id));
    max_id = std::max(max_id, id);
  }
  bpe->id_to_token_.resize(static_cast<size_t>(max_id + 1));
  bpe->id_present_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [token, id] : bpe->vocab_) {
    bpe->id_to_token_[id] = token;
    bpe->id_present_[id] = true;
  }

  TSR_ASSIGN_OR_RETURN(std::string unk,
                       OptionalString(model, "unk_token", where, ""));
  if (!unk.empty()) {
    auto id = bpe->TokenToId(unk);
    if (!id) {
      return InvalidArgumentError(fmt::format(
          "{}.unk_token: \"{}\" is not in the vocabulary", where, unk));
    }
    bpe->unk_id_ = *id;
  }
  TSR_ASSIGN_OR_RETURN(
      bpe->continuing_subword_prefix_,
      OptionalString(model, "continuing_subword_prefix", where, ""));
  TSR_ASSIGN_OR_RETURN(bpe->end_of_word_suffix_,
                       OptionalString(model, "end_of_word_suffix", where, ""));
  TSR_ASSIGN_OR_RETURN(bpe->fuse_unk_,
                       OptionalBool(model, "fuse_unk", where, false));
  TSR_ASSIGN_OR_RETURN(bpe->byte_fallback_,
                       OptionalBool(model, "byte_fallback", where, false));
  TSR_ASSIGN_OR_RETURN(bpe->ignore_merges_,
                       OptionalBool(model, "ignore_merges", where, false));
  if (const Json* dropout = FindField(model, "dropout")) {
    if (!dropout->is_number() || dropout->get<double>() < 0.0 ||
        dropout->get<double>() > 1.0) {
      return InvalidArgumentError(fmt::format(
          "{}.dropout: expected null or a number in [0, 1]", where));
    }
    if (dropout->get<double>() > 0.0) {
      return UnimplementedError(fmt::format(
          "{}.dropout: BPE dropout ({}) is a training-time feature and is not "
          "supported; set it to null",
          where, dropout->get<double>()));
    }
  }
  for (int b = 0; b < 256; ++b) {
    auto id = bpe->TokenToId(fmt::format("<0x{:02X}>", b));
    bpe->byte_ids_[b] = id ? *id : -1;
  }

  const Json* merges = FindField(model, "merges");
  if (merges == nullptr) {
    return InvalidArgumentError(
        fmt::format("{}.merges: required array is missing", where));
  }
  TSR_RETURN_IF_ERROR(bpe->ParseMerges(*merges, where));
  return bpe;
}

Status BpeModel::ParseMerges(const Json& merges, std::string_view where) {
  if (!merges.is_array()) {
    return InvalidArgumentError(
        fmt::format("{}.merges: expected an array, found {}", where,
                    DescribeJsonType(merges)));
  }
  merges_.reserve(merges.size());
  const size_t prefix_len = continuing_subword_prefix_.size();
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const Json& entry = merges[rank];
    std::string left, right;
    if (entry.is_string()) {
      const std::string& line = entry.get_ref<const std::string&>();
      const size_t space = line.find(' ');
      if (space == std::string::npos) {
        return InvalidArgumentError(fmt::format(
            "{}.merges[{}]: \"{}\" is not two tokens separated by a space",
            where, rank, line));
      }
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else if (entry.is_array() && entry.size() == 2 && entry[0].is_string() &&
               entry[1].is_string()) {
      left = entry[0].get<std::string>();
      right = entry[1].get<std::string>();
    } else {
      return InvalidArgumentError(fmt::format(
          "{}.merges[{}]: expected \"a b\" or [\"a\", \"b\"], found {}", where,
          rank, entry.dump()));
    }
    auto left_id = TokenToId(left);
    auto right_id = TokenToId(right);
    if (right.size() < prefix_len) right_id.reset();
    const std::string merged =
        right_id ? left + right.substr(prefix_len) : std::string();
    auto new_id = right_id ? TokenToId(merged) : std::nullopt;
    if (!left_id || !right_id || !new_id) {
      const std::string& missing = !left_id ? left : !right_id ? right : merged;
      return InvalidArgumentError(fmt::format(
          "{}.merges[{}]: token \"{}\" is not in the vocabulary; the merges do "
          "not belong to this vocab",
          where, rank, missing));
    }
    // As in Hugging Face, a repeated pair keeps its last rank.
    merges_[PairKey(*left_id, *right_id)] =
        Merge{static_cast<int32_t>(rank), *new_id};
  }
  return OkStatus();
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || id >= id_limit() || !id_present_[id]) return nullptr;
  return &id_to_token_[id];
}

const BpeModel::Merge* BpeModel::FindMerge(int32_t left, int32_t right) const {
  auto it = merges_.find(PairKey(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

void BpeModel::Tokenize(std::string_view word,
                        std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (auto id = TokenToId(word)) {
      ids->push_back(*id);
      return;
    }
  }
  if (cache_.Lookup(word, ids)) return;
  const size_t mark = ids->size();
  MergeWord(word, ids);
  cache_.Insert(
      word, std::span<const int32_t>(ids->data() + mark, ids->size() - mark));
}

void BpeModel::MergeWord(std::string_view word,
                         std::vector<int32_t>* ids) const {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto add = [&symbols](int32_t id, size_t len) {
    const int32_t index = static_cast<int32_t>(symbols.size());
    if (index > 0) symbols.back().next = index;
    symbols.push_back({id, index - 1, -1, static_cast<uint32_t>(len)});
  };

  // 1. Initial symbols: one per character (with the subword prefix/suffix
  //    when the model has them), else its byte tokens, else unk.
  int32_t pending_unk = -1;  // unk id waiting to be added, or -1
  size_t pending_unk_len = 0;
  auto flush_unk = [&] {
    if (pending_unk >= 0) add(pending_unk, pending_unk_len);
    pending_unk = -1;
  };
  std::string decorated;
  size_t pos = 0;
  while (pos < word.size()) {
    const size_t char_len = ReadUtf8(word, pos).length;
    std::string_view piece = word.substr(pos, char_len);
    const bool is_first = pos == 0;
    const bool is_last = pos + char_len == word.size();
    if ((!is_first && !continuing_subword_prefix_.empty()) ||
        (is_last && !end_of_word_suffix_.empty())) {
      decorated.clear();
      if (!is_first) decorated += continuing_subword_prefix_;
      decorated += piece;
      if (is_last) decorated += end_of_word_suffix_;
      piece = decorated;
    }
    pos += char_len;

    if (auto id = TokenToId(piece)) {
      flush_unk();
      add(*id, char_len);
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (char c : piece) all_bytes &= byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all_bytes) {
        flush_unk();
        for (char c : piece) add(byte_ids_[static_cast<uint8_t>(c)], 1);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && fuse_unk_) {
        pending_unk_len += char_len;
      } else {
        flush_unk();
        pending_unk = *unk_id_;
        pending_unk_len = char_len;
      }
    }
    // Without an unk token the character is dropped, as Hugging Face does.
  }
  flush_unk();
  if (symbols.empty()) return;

  // 2. Merge: always the lowest-ranked adjacent pair, leftmost first.
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  {
    std::vector<Candidate> initial;
    initial.reserve(symbols.size());
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      if (const Merge* m = FindMerge(symbols[i].id, symbols[i + 1].id)) {
        initial.push_back({m->rank, static_cast<int32_t>(i), m->new_id});
      }
    }
    heap = decltype(heap)(std::greater<>(), std::move(initial));
  }
  while (!heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    Symbol& left = symbols[top.pos];
    if (left.len == 0 || left.next < 0) continue;  // merged away / at the end
    Symbol& right = symbols[left.next];
    const Merge* m = FindMerge(left.id, right.id);
    if (m == nullptr || m->new_id != top.new_id) continue;  // stale entry

    left.id = top.new_id;
    left.len += right.len;
    right.len = 0;
    left.next = right.next;
    if (left.next >= 0) symbols[left.next].prev = top.pos;

    if (left.prev >= 0) {
      if (const Merge* pm = FindMerge(symbols[left.prev].id, left.id)) {
        heap.push({pm->rank, left.prev, pm->new_id});
      }
    }
    if (left.next >= 0) {
      if (const Merge* nm = FindMerge(left.id, symbols[left.next].id)) {
        heap.push({nm->rank, top.pos, nm->new_id});
      }
    }
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next)
    ids->push_back(symbols[i].id);
}

}  // namespace tessera::tok
