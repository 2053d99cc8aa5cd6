#include "engine/stop_tokens.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace tessera::engine {

StatusOr<StopTokens> StopTokens::Create(std::span<const int32_t> eos_ids,
                                        std::span<const int32_t> stop_token_ids,
                                        bool ignore_eos, int64_t vocab_size) {
  StopTokens t;
  for (int32_t id : eos_ids) {
    if (id < 0 || id >= vocab_size) {
      return InvalidArgumentError(
          fmt::format("EOS token id {} is outside the vocabulary [0, {}); fix "
                      "eos_token_id in the model's generation_config.json",
                      id, vocab_size));
    }
    t.eos_.insert(id);
  }
  for (int32_t id : stop_token_ids) {
    if (id < 0 || id >= vocab_size) {
      return InvalidArgumentError(fmt::format(
          "stop_token_ids: token id {} is outside the vocabulary [0, {}); "
          "use ids the model's tokenizer produces",
          id, vocab_size));
    }
    t.stop_.insert(id);
  }
  t.ignore_eos_ = ignore_eos;
  return t;
}

TokenStopReason StopTokens::Check(int32_t id) const {
  if (stop_.contains(id)) return TokenStopReason::kStopToken;
  if (!ignore_eos_ && eos_.contains(id)) return TokenStopReason::kEos;
  return TokenStopReason::kNone;
}

std::vector<int32_t> StopTokens::ActiveIds() const {
  std::vector<int32_t> ids(stop_.begin(), stop_.end());
  if (!ignore_eos_) {
    for (int32_t id : eos_) {
      if (!stop_.contains(id)) ids.push_back(id);
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace tessera::engine
