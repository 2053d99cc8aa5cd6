// `tessera bench --soak SECONDS`: a long mixed load against a running
// server that proves it does not leak and does not lose requests.
//
// `concurrency` clients loop until the time is up, each request drawn from
// a seeded stream: chat or completions, streamed or whole, and at fixed
// rates a client that disconnects mid-answer (a stream hung up after its
// first event, a whole answer given up after 200 ms) or a /generate stream
// aborted with /abort_request after its first event. Every
// `sample_interval_s` the server's /metrics is read for its resident
// memory, open descriptors and threads (process_* gauges).
//
// The run fails (SoakReport::passed false, each reason in `failures`) when
//   - a request is lost: no answer and no error (a refused request — 503 —
//     is an answer), or a valid request got a 4xx/5xx other than 503;
//   - over the second half of the run, the least-squares slope of resident
//     memory exceeds max_rss_growth_mib_per_10min and the fitted growth
//     exceeds 2 MiB (the floor keeps allocator noise in a short run from
//     counting);
//   - the fitted growth over the second half of the descriptors exceeds
//     concurrency + 8 or of the threads exceeds 4, or once the load stopped
//     and the server is idle, the descriptors are not back within 8 of the
//     first sample or the threads within 4;
//   - the server does not return to idle (no request running or queued, no
//     KV in use) within 30 s of the end, or /metrics cannot be read.
//
// Blocks the calling thread; the progress line goes to stderr.
#ifndef TESSERA_BENCH_SOAK_H_
#define TESSERA_BENCH_SOAK_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::bench {

struct SoakConfig {
  std::string base_url = "http://127.0.0.1:30000";
  std::string model;  // empty: the first model the server lists
  double seconds = 60;
  int64_t concurrency = 16;
  uint64_t seed = 0;
  double sample_interval_s = 0;  // 0: seconds / 30, within [1, 10]
  double disconnect_fraction = 0.10;
  double abort_fraction = 0.05;
  double max_rss_growth_mib_per_10min = 1.0;
  bool progress = false;
};

struct SoakReport {
  // {"benchmark": "soak", "base_url", "model", "seconds", "concurrency",
  //  "seed", "requests": {"total", "ok", "refused", "errors", "lost",
  //  "disconnects", "aborts"}, "resident_memory": {"start_mib", "end_mib",
  //  "slope_mib_per_10min"}, "open_fds": {"start", "end", "idle",
  //  "second_half_growth"}, "threads": {...}, "samples": [{"t", "rss_mib",
  //  "open_fds", "threads"}], "passed", "failures": [...]}
  nlohmann::ordered_json result;
  bool passed = false;
  std::vector<std::string> failures;
};

// Errors: InvalidArgument for a bad setting; Unavailable when no ready
// server answers at base_url. A failed soak is a report with passed false.
StatusOr<SoakReport> RunSoak(const SoakConfig& config);

// Least-squares slope of y over t (0 with fewer than two points).
double FitSlope(const std::vector<double>& t, const std::vector<double>& y);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_SOAK_H_
