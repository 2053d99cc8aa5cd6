// The load the benchmark puts on the server: when each request arrives
// (a Poisson process at --request-rate, or all at once) and how many may
// be in flight (--max-concurrency), in the manner of SGLang's
// bench_serving.
//
// Request i arrives at ArrivalTimes(...)[i] seconds after the start and
// is sent as soon as it has arrived and fewer than max_concurrency
// requests are in flight; waiting requests are sent first come, first
// served. Each in-flight request runs on its own thread; threads are
// started as the load needs them (at most max_concurrency, or one per
// request without a limit) and reused.
//
// RunLoad is called from one thread and blocks until every request is
// done; `send` is called concurrently from the worker threads.
#ifndef TESSERA_BENCH_LOAD_GENERATOR_H_
#define TESSERA_BENCH_LOAD_GENERATOR_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "base/status.h"
#include "bench/completion_stream.h"
#include "bench/datasets.h"

namespace tessera::bench {

inline constexpr double kInfiniteRate = std::numeric_limits<double>::infinity();

// (count,) arrival times in seconds, non-decreasing, the first 0: the gaps
// are exponential with mean 1 / request_rate (a Poisson process) drawn
// from `seed`; all 0 when request_rate is infinite. Requires
// request_rate > 0.
std::vector<double> ArrivalTimes(int64_t count, double request_rate,
                                 uint64_t seed);

struct LoadOptions {
  double request_rate = kInfiniteRate;  // requests per second, > 0
  int64_t max_concurrency = 0;          // 0: no limit
  uint64_t seed = 0;                    // of the arrival times
  // Called after each request completes with (done, total), from a worker
  // thread, one call at a time.
  std::function<void(int64_t, int64_t)> on_progress;
};

struct LoadResult {
  std::vector<RequestResult> results;  // in the order of the requests
  double duration_s = 0.0;             // first arrival -> last completion
  int64_t peak_concurrency = 0;        // most requests in flight at once
};

using SendFn = std::function<RequestResult(const BenchRequest&)>;

// Runs every request through `send` under the schedule above. Internal
// error only when not even one worker thread can be started.
StatusOr<LoadResult> RunLoad(const std::vector<BenchRequest>& requests,
                             const SendFn& send, const LoadOptions& options);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_LOAD_GENERATOR_H_
