// StopTokens: decides whether a generated token id ends a request.
//
// Two sources, as in vLLM/SGLang: the model's EOS ids (generation_config's
// eos_token_id, possibly several) and the request's stop_token_ids. With
// ignore_eos the EOS ids no longer stop generation (benchmarks use it to run
// to max_tokens) but the request's own stop_token_ids still do. A stop token
// is not part of the emitted text (the detokenizer skips special tokens) but
// counts as a generated token.
//
// Lookup is O(1) average (a hash set). Immutable after Create: safe to share
// across threads for reading.
#ifndef TESSERA_ENGINE_STOP_TOKENS_H_
#define TESSERA_ENGINE_STOP_TOKENS_H_

#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "base/status.h"

namespace tessera::engine {

enum class TokenStopReason {
  kNone,       // keep generating
  kEos,        // one of the model's EOS ids
  kStopToken,  // one of the request's stop_token_ids
};

class StopTokens {
 public:
  // Errors (INVALID_ARGUMENT, naming the id): an id outside [0, vocab_size).
  static StatusOr<StopTokens> Create(std::span<const int32_t> eos_ids,
                                     std::span<const int32_t> stop_token_ids,
                                     bool ignore_eos, int64_t vocab_size);

  // A request stop id that is also an EOS id reports kStopToken, so it still
  // stops with ignore_eos.
  TokenStopReason Check(int32_t id) const;
  bool Stops(int32_t id) const { return Check(id) != TokenStopReason::kNone; }

  // Every id that would stop generation now (EOS unless ignored, plus the
  // request's stop ids): what min_tokens masks.
  std::vector<int32_t> ActiveIds() const;

 private:
  std::unordered_set<int32_t> eos_;
  std::unordered_set<int32_t> stop_;
  bool ignore_eos_ = false;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_STOP_TOKENS_H_
