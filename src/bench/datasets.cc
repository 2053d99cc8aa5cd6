#include "bench/datasets.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "bench/seeded_random.h"

namespace tessera::bench {
namespace {

Status CheckAtLeastOne(int64_t value, const char* flag) {
  if (value >= 1) return OkStatus();
  return InvalidArgumentError(
      fmt::format("{} is {}; it must be at least 1", flag, value));
}

Status CheckVocab(int64_t vocab_size) {
  if (vocab_size >= 1 && vocab_size <= INT32_MAX) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "vocabulary size {} is unusable for random prompts; the server's "
      "/server_info or --vocab-size must give a size in [1, 2^31)",
      vocab_size));
}

int64_t MinLength(int64_t len, double ratio) {
  return std::max<int64_t>(1, int64_t(std::floor(double(len) * ratio)));
}

}  // namespace

StatusOr<std::vector<BenchRequest>> MakeRandomDataset(
    const RandomDatasetOptions& o) {
  TSR_RETURN_IF_ERROR(CheckAtLeastOne(o.num_prompts, "--num-prompts"));
  TSR_RETURN_IF_ERROR(CheckAtLeastOne(o.input_len, "--random-input-len"));
  TSR_RETURN_IF_ERROR(CheckAtLeastOne(o.output_len, "--random-output-len"));
  TSR_RETURN_IF_ERROR(CheckVocab(o.vocab_size));
  if (!(o.range_ratio >= 0.0 && o.range_ratio <= 1.0)) {
    return InvalidArgumentError(fmt::format(
        "--random-range-ratio is {}; it must be in [0, 1] (1: every length "
        "exactly --random-input-len / --random-output-len)",
        o.range_ratio));
  }
  SeededRandom rng(o.seed);
  const int64_t min_in = MinLength(o.input_len, o.range_ratio);
  const int64_t min_out = MinLength(o.output_len, o.range_ratio);
  std::vector<BenchRequest> requests(size_t(o.num_prompts));
  for (BenchRequest& r : requests) {
    const int64_t in = rng.UniformInt(min_in, o.input_len);
    r.output_len = rng.UniformInt(min_out, o.output_len);
    r.prompt_ids = rng.TokenIds(in, o.vocab_size);
  }
  return requests;
}

StatusOr<std::vector<BenchRequest>> MakeSharedPrefixDataset(
    const SharedPrefixDatasetOptions& o) {
  TSR_RETURN_IF_ERROR(CheckAtLeastOne(o.num_groups, "--gsp-num-groups"));
  TSR_RETURN_IF_ERROR(
      CheckAtLeastOne(o.prompts_per_group, "--gsp-prompts-per-group"));
  TSR_RETURN_IF_ERROR(
      CheckAtLeastOne(o.system_prompt_len, "--gsp-system-prompt-len"));
  TSR_RETURN_IF_ERROR(CheckAtLeastOne(o.question_len, "--gsp-question-len"));
  TSR_RETURN_IF_ERROR(CheckAtLeastOne(o.output_len, "--gsp-output-len"));
  TSR_RETURN_IF_ERROR(CheckVocab(o.vocab_size));
  SeededRandom rng(o.seed);
  std::vector<BenchRequest> requests;
  requests.reserve(size_t(o.num_groups * o.prompts_per_group));
  for (int64_t g = 0; g < o.num_groups; ++g) {
    const std::vector<int32_t> prefix =
        rng.TokenIds(o.system_prompt_len, o.vocab_size);
    for (int64_t p = 0; p < o.prompts_per_group; ++p) {
      BenchRequest r;
      r.group = int32_t(g);
      r.output_len = o.output_len;
      r.prompt_ids = prefix;
      const std::vector<int32_t> question =
          rng.TokenIds(o.question_len, o.vocab_size);
      r.prompt_ids.insert(r.prompt_ids.end(), question.begin(),
                          question.end());
      requests.push_back(std::move(r));
    }
  }
  rng.Shuffle(requests);
  return requests;
}

BenchRequest MakeWarmupRequest(const BenchRequest& like, int64_t vocab_size,
                               uint64_t seed) {
  SeededRandom rng(seed);
  BenchRequest r;
  r.output_len = like.output_len;
  r.prompt_ids = rng.TokenIds(int64_t(like.prompt_ids.size()), vocab_size);
  return r;
}

int64_t TotalInputTokens(const std::vector<BenchRequest>& requests) {
  int64_t total = 0;
  for (const BenchRequest& r : requests) total += int64_t(r.prompt_ids.size());
  return total;
}

int64_t TotalOutputTokens(const std::vector<BenchRequest>& requests) {
  int64_t total = 0;
  for (const BenchRequest& r : requests) total += r.output_len;
  return total;
}

}  // namespace tessera::bench
