// LogitProcessor: one request's host-side logit adjustments (logit_bias,
// repetition / presence / frequency penalties, min_tokens), applied in place
// to its row of F32 logits [V] before the sampler runs.
//
// Semantics, for each token id t with logit x[t], applied in this order
// (the order of vLLM's sampler: logit processors, then penalties):
//   1. logit_bias (OpenAI):   x[t] += bias[t]                for t in bias
//   2. repetition_penalty r (Hugging Face / SGLang / vLLM), over tokens seen
//      in prompt + output:    x[t] = x[t] > 0 ? x[t] / r : x[t] * r
//      (r > 1 discourages repeats; r == 1 is off; x[t] == 0 stays 0)
//   3. presence p and frequency f (OpenAI), over GENERATED tokens only, with
//      c[t] = times t was generated so far:
//                             x[t] -= f * c[t] + p * (c[t] > 0)
//   4. min_tokens n: while fewer than n tokens were generated, every id that
//      would stop the request (EOS unless ignore_eos, stop_token_ids) gets
//      x[t] = -inf, so nothing above can undo it.
// Because bias comes first, a positive bias on a repeated token is itself
// divided by r (and a negative one multiplied), as in vLLM.
//
// Cost: AddOutputToken is O(1) average (hash-map count update, no rescan);
// Apply is O(#bias + #distinct seen tokens + #stop ids), never O(V) unless
// the request has seen that many distinct tokens.
//
// Invariants: counts_ holds exactly the generated ids and their counts;
// seen_ holds the distinct ids of prompt + output (kept only when
// repetition_penalty != 1); output_len_ is the number
// of generated tokens. Thread-safety: not thread-safe; the scheduler owns
// one per request and uses it from one thread.
#ifndef TESSERA_ENGINE_LOGIT_PROCESSOR_H_
#define TESSERA_ENGINE_LOGIT_PROCESSOR_H_

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tessera::engine {

struct LogitParams {
  float repetition_penalty = 1.0f;  // > 0; 1 = off
  float presence_penalty = 0.0f;    // [-2, 2]; 0 = off
  float frequency_penalty = 0.0f;   // [-2, 2]; 0 = off
  // (token id, bias in [-100, 100]); a repeated id's biases add up.
  std::vector<std::pair<int32_t, float>> logit_bias;
  int32_t min_tokens = 0;  // >= 0
  // Ids masked while output length < min_tokens (StopTokens::ActiveIds()).
  std::vector<int32_t> min_tokens_stop_ids;
};

// Checks `params` against the vocabulary; INVALID_ARGUMENT names the field
// and, for logit_bias / stop ids, the offending token id.
Status ValidateLogitParams(const LogitParams& params, int64_t vocab_size);

class LogitProcessor {
 public:
  // Validates params; `prompt_ids` seed the repetition-penalty set (they must
  // lie in [0, vocab_size), else INVALID_ARGUMENT naming the id).
  static StatusOr<LogitProcessor> Create(LogitParams params, int64_t vocab_size,
                                         std::span<const int32_t> prompt_ids);

  // Records one generated token (call once per sampled id, in order). The
  // id must be in [0, vocab_size) (the sampler's output; asserted).
  void AddOutputToken(int32_t id);

  // `logits`: F32 [V] host row, V == vocab_size; adjusted in place.
  void Apply(std::span<float> logits) const;

  // False when Apply would change nothing for the current step (no bias, no
  // penalties, min_tokens satisfied): the scheduler can skip the copy.
  bool active() const;

  int64_t output_len() const { return output_len_; }
  int64_t vocab_size() const { return vocab_size_; }
  // How many times `id` was generated (0 if never).
  int32_t OutputCount(int32_t id) const;
  const LogitParams& params() const { return params_; }

 private:
  LogitProcessor(LogitParams params, int64_t vocab_size);
  void MarkSeen(int32_t id);

  LogitParams params_;
  int64_t vocab_size_;
  // logit_bias merged per id (duplicates summed), in first-seen order.
  std::vector<std::pair<int32_t, float>> bias_;
  std::unordered_set<int32_t> seen_set_;         // prompt + output, distinct
  std::vector<int32_t> seen_;                    // same ids, insertion order
  std::unordered_map<int32_t, int32_t> counts_;  // output id -> count
  std::vector<int32_t> output_distinct_;         // keys of counts_, in order
  int64_t output_len_ = 0;
};

// Applies each row's processor to logits F32 [B, V] (row-major, host):
// processors[b] adjusts row b; a null entry leaves its row unchanged.
// INVALID_ARGUMENT when logits.size() != B * vocab_size.
Status ApplyLogitProcessors(std::span<float> logits, int64_t vocab_size,
                            std::span<const LogitProcessor* const> processors);

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_LOGIT_PROCESSOR_H_
