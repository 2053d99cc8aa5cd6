// The figures of a serving benchmark run, computed from the per-request
// measurements, as SGLang's bench_serving defines them:
//   throughputs   tokens (or requests) of the successful requests divided
//                 by the run's duration (first arrival -> last completion);
//                 input tokens are the prompt ids sent, output tokens
//                 usage.completion_tokens;
//   TTFT, E2E     one value per successful request;
//   TPOT          (E2E - TTFT) / (output_tokens - 1), for requests with
//                 more than one output token;
//   ITL           every gap between consecutive token events, all requests
//                 pooled;
//   concurrency   the sum of E2E latencies / duration (the mean number of
//                 requests in flight), beside the observed peak;
//   cached        usage cached_tokens / usage prompt_tokens.
// Percentiles interpolate linearly between the closest ranks (numpy's
// default); std is the population standard deviation. Times in the summary
// are milliseconds.
//
// Pure functions; thread-safe.
#ifndef TESSERA_BENCH_BENCH_STATS_H_
#define TESSERA_BENCH_BENCH_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/load_generator.h"

namespace tessera::bench {

// The p-th percentile (p in [0, 100]) of `sorted` (ascending, non-empty):
// rank r = p / 100 * (n - 1), interpolated between floor(r) and ceil(r).
double Percentile(const std::vector<double>& sorted, double p);

struct Distribution {
  int64_t count = 0;  // all figures 0 when count is 0
  double mean = 0.0;
  double median = 0.0;  // p50
  double std = 0.0;     // population standard deviation
  double p95 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
};

// Summary of `values` (any order).
Distribution Summarize(std::vector<double> values);

// How many failed requests' messages the summary keeps.
inline constexpr size_t kMaxErrorsKept = 5;

struct BenchSummary {
  int64_t completed = 0;
  int64_t failed = 0;
  std::vector<std::string> errors;  // the first kMaxErrorsKept failures
  double duration_s = 0.0;
  int64_t total_input_tokens = 0;   // prompt ids of successful requests
  int64_t total_output_tokens = 0;  // usage.completion_tokens summed
  int64_t reported_prompt_tokens = 0;  // usage.prompt_tokens summed
  int64_t cached_tokens = 0;
  double cached_token_fraction = 0.0;  // cached / reported prompt tokens
  // Successful requests whose output_tokens != the max_tokens asked for
  // (a server that ignores ignore_eos).
  int64_t output_len_mismatches = 0;
  double request_throughput = 0.0;  // requests/s
  double input_throughput = 0.0;    // tokens/s
  double output_throughput = 0.0;
  double total_throughput = 0.0;
  double mean_concurrency = 0.0;
  int64_t peak_concurrency = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
};

BenchSummary SummarizeLoad(const LoadResult& load);

// {"completed", "failed", "errors": [...], "duration_s", ...,
//  "ttft_ms": {"mean", "median", "std", "p95", "p99", "max"}, "tpot_ms",
//  "itl_ms", "e2e_ms"} (field names as in BenchSummary).
nlohmann::ordered_json SummaryJson(const BenchSummary& summary);

// The human-readable block ("==== Serving Benchmark Result ====") for a
// full result object: SummaryJson's fields plus "base_url", "model",
// "dataset" {"name", ...}, "request_rate" (null: inf) and
// "max_concurrency" (null: no limit).
std::string ResultTable(const nlohmann::ordered_json& result);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_BENCH_STATS_H_
