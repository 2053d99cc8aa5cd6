// The request sets of `tessera bench`: prompts of random token ids, in the
// manner of SGLang's bench_serving "random" and "generated-shared-prefix"
// datasets. No tokenizer is involved: prompts are sent as token-id arrays,
// so input lengths are exact, and every request asks for exactly
// output_len tokens (ignore_eos, max_tokens = output_len).
//
// random: num_prompts prompts; each input length is uniform in
//   [max(1, floor(input_len * range_ratio)), input_len] and each output
//   length likewise from output_len; ids uniform in [0, vocab_size).
// shared-prefix: num_groups groups; each group has one random system
//   prefix of system_prompt_len ids shared by its prompts_per_group
//   prompts, each prompt = prefix + its own random question of
//   question_len ids; output_len tokens each. The G * P requests are
//   shuffled so the groups interleave.
//
// Both are a pure function of their options (SeededRandom): the same seed
// gives the same requests on every machine. Thread-compatible.
#ifndef TESSERA_BENCH_DATASETS_H_
#define TESSERA_BENCH_DATASETS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::bench {

struct BenchRequest {
  std::vector<int32_t> prompt_ids;  // (input_len,) token ids < vocab_size
  int64_t output_len = 1;           // tokens to generate, >= 1
  int32_t group = -1;               // shared-prefix group; -1 for random
};

struct RandomDatasetOptions {
  int64_t num_prompts = 1000;
  int64_t input_len = 1024;
  int64_t output_len = 1024;
  double range_ratio = 0.0;  // in [0, 1]; 1: every length exactly *_len
  int64_t vocab_size = 0;    // > 0, from the server
  uint64_t seed = 0;
};

struct SharedPrefixDatasetOptions {
  int64_t num_groups = 64;
  int64_t prompts_per_group = 16;
  int64_t system_prompt_len = 2048;
  int64_t question_len = 128;
  int64_t output_len = 256;
  int64_t vocab_size = 0;  // > 0, from the server
  uint64_t seed = 0;
};

// InvalidArgument (naming the flag) for sizes < 1, a ratio outside [0, 1]
// or a vocabulary < 1.
StatusOr<std::vector<BenchRequest>> MakeRandomDataset(
    const RandomDatasetOptions& options);
StatusOr<std::vector<BenchRequest>> MakeSharedPrefixDataset(
    const SharedPrefixDatasetOptions& options);

// One prompt shaped like `like` (same input and output length) with fresh
// random ids drawn from `seed`: the warm-up request, which then leaves
// nothing in the server's prefix cache that the measured requests could
// hit.
BenchRequest MakeWarmupRequest(const BenchRequest& like, int64_t vocab_size,
                               uint64_t seed);

// Sum of the prompt lengths and of the output lengths.
int64_t TotalInputTokens(const std::vector<BenchRequest>& requests);
int64_t TotalOutputTokens(const std::vector<BenchRequest>& requests);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_DATASETS_H_
