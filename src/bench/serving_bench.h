// `tessera bench` (serving): the whole benchmark against a running
// OpenAI-compatible server, in the manner of SGLang's bench_serving.
//
//   1. probe the server (server_probe.h): ready, the model, its context
//      length and vocabulary;
//   2. build the requests (datasets.h) from `seed`;
//   3. check that each fits the model's context (input + output <=
//      max_model_len, when the server says it);
//   4. send `warmup_requests` requests one after another, shaped like the
//      first request but with their own random ids, untimed; one failing
//      stops the run;
//   5. run the load (load_generator.h), each request a streamed completion
//      (request_runner.h);
//   6. summarise (bench_stats.h) into one JSON object.
//
// Seeds: the dataset uses `seed`, the arrival times and the warm-up prompts
// streams derived from it, so changing the request rate leaves the prompts
// unchanged. Blocks the calling thread; run one at a time per process
// (the progress line is on stderr).
#ifndef TESSERA_BENCH_SERVING_BENCH_H_
#define TESSERA_BENCH_SERVING_BENCH_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "base/progress.h"
#include "base/status.h"
#include "bench/bench_stats.h"
#include "bench/datasets.h"
#include "bench/load_generator.h"
#include "bench/multi_turn.h"

namespace tessera::bench {

inline constexpr const char* kDatasetRandom = "random";
inline constexpr const char* kDatasetSharedPrefix = "shared-prefix";
inline constexpr const char* kDatasetMultiTurn = "multi-turn";

struct ServingBenchConfig {
  std::string base_url = "http://127.0.0.1:30000";
  std::string model;  // empty: the first model the server lists
  std::string dataset_name = kDatasetRandom;  // or shared-prefix, multi-turn
  // Their vocab_size and seed are filled in by the run. multi-turn takes
  // num_conversations from random.num_prompts, question_len and output_len
  // from random.input_len / output_len, and its rounds from here.
  RandomDatasetOptions random;
  SharedPrefixDatasetOptions shared_prefix;
  int64_t multi_turn_rounds = 4;
  double request_rate = kInfiniteRate;  // requests/s, > 0
  int64_t max_concurrency = 0;          // 0: no limit
  uint64_t seed = 0;
  int64_t warmup_requests = 1;  // >= 0
  int64_t vocab_size = 0;       // 0: the server's /server_info vocab_size
  // Members added to every request body (SGLang's --extra-request-body),
  // e.g. {"response_format": {...}} to measure structured output.
  nlohmann::ordered_json extra_request_body = nlohmann::ordered_json::object();
  // "requests: 42% (42 / 100)" on stderr (base/progress.h).
  ProgressReporter::Mode progress = ProgressReporter::Mode::kOff;
};

struct ServingBenchReport {
  // {"benchmark": "serving", "base_url", "model", "dataset": {"name",
  // ...sizes}, "request_rate" (null: inf), "max_concurrency" (null: none),
  // "seed", "warmup_requests", then SummaryJson's fields}. multi-turn adds
  // "ttft_ms_by_round" (mean TTFT of each round) and, from the server's
  // /metrics before and after (null when it has none),
  // "cache_tier_hit_tokens" {"device", "host", "storage"} and
  // "cache_tier_hit_rate" (each / the prompt tokens sent).
  nlohmann::ordered_json result;
  BenchSummary summary;
};

// Errors, by what the user should do:
//   InvalidArgument   a flag or model choice is unusable (message names it);
//   Unavailable       no ready server at base_url (says how to start one);
//   FailedPrecondition the server is not OpenAI-compatible enough;
//   Aborted           the warm-up request failed (with the server's reason).
// Failed measured requests are not an error: they are counted in the
// report (summary.failed) with their messages.
StatusOr<ServingBenchReport> RunServingBench(const ServingBenchConfig& config);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_SERVING_BENCH_H_
