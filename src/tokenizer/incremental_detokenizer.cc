#include "tokenizer/incremental_detokenizer.h"

namespace tessera {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer,
                                               bool skip_special_tokens)
    : tokenizer_(tokenizer),
      skip_special_tokens_(skip_special_tokens),
      stream_(tokenizer.decoder()) {}

void IncrementalDetokenizer::Push(int32_t id, std::string* out) {
  if (finished_) return;
  if (skip_special_tokens_ && tokenizer_.IsSpecial(id)) return;
  if (auto token = tokenizer_.IdToToken(id)) stream_.Push(*token, out);
}

void IncrementalDetokenizer::Prime(std::span<const int32_t> ids) {
  std::string discarded;
  for (int32_t id : ids) Push(id, &discarded);
}

std::string IncrementalDetokenizer::Add(int32_t id) {
  std::string out;
  Push(id, &out);
  return out;
}

std::string IncrementalDetokenizer::Flush() {
  std::string out;
  if (finished_) return out;
  stream_.Finish(&out);
  finished_ = true;
  return out;
}

}  // namespace tessera
