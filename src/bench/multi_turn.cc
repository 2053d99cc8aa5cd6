#include "bench/multi_turn.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bench/seeded_random.h"

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

StatusOr<std::vector<std::vector<BenchRequest>>> MakeMultiTurnDataset(
    const MultiTurnDatasetOptions& o) {
  auto at_least_one = [](int64_t v, const char* flag) -> Status {
    if (v >= 1) return OkStatus();
    return InvalidArgumentError(
        fmt::format("{} is {}; it must be at least 1", flag, v));
  };
  TSR_RETURN_IF_ERROR(at_least_one(o.num_conversations, "--num-prompts"));
  TSR_RETURN_IF_ERROR(at_least_one(o.rounds, "--multi-turn-rounds"));
  TSR_RETURN_IF_ERROR(at_least_one(o.question_len, "--random-input-len"));
  TSR_RETURN_IF_ERROR(at_least_one(o.output_len, "--random-output-len"));
  if (o.vocab_size < 1 || o.vocab_size > INT32_MAX) {
    return InvalidArgumentError(fmt::format(
        "vocabulary size {} is unusable for random prompts", o.vocab_size));
  }
  SeededRandom rng(o.seed);
  std::vector<std::vector<BenchRequest>> out(size_t(o.num_conversations));
  for (int64_t c = 0; c < o.num_conversations; ++c) {
    std::vector<int32_t> history;
    for (int64_t r = 0; r < o.rounds; ++r) {
      const std::vector<int32_t> q = rng.TokenIds(o.question_len, o.vocab_size);
      history.insert(history.end(), q.begin(), q.end());
      BenchRequest req;
      req.prompt_ids = history;
      req.output_len = o.output_len;
      req.group = int32_t(c);
      out[size_t(c)].push_back(std::move(req));
      const std::vector<int32_t> a = rng.TokenIds(o.output_len, o.vocab_size);
      history.insert(history.end(), a.begin(), a.end());
    }
  }
  return out;
}

StatusOr<LoadResult> RunMultiTurnLoad(
    const std::vector<std::vector<BenchRequest>>& conversations,
    const SendFn& send, const LoadOptions& options) {
  if (!(options.request_rate > 0.0)) {
    return InvalidArgumentError(fmt::format(
        "--request-rate is {}; it must be > 0 requests/s, or inf",
        options.request_rate));
  }
  const int64_t n = int64_t(conversations.size());
  size_t total = 0;
  std::vector<size_t> offset;
  for (const auto& c : conversations) {
    offset.push_back(total);
    total += c.size();
  }
  LoadResult out;
  out.results.resize(total);
  if (n == 0) return out;
  const std::vector<double> arrivals =
      ArrivalTimes(n, options.request_rate, options.seed);
  const int64_t limit = options.max_concurrency > 0 ? options.max_concurrency : n;

  // Every conversation is live from its arrival on; the limit applies to
  // requests, taken first come, first served, so the rounds of all live
  // conversations interleave (their histories are the working set).
  std::mutex mu;
  std::condition_variable cv;
  int64_t in_flight = 0, done = 0;
  uint64_t next_ticket = 0, serving = 0;  // FIFO order of waiting rounds
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(size_t(n));
  for (int64_t c = 0; c < n; ++c) {
    threads.emplace_back([&, c] {
      std::this_thread::sleep_until(
          start + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(arrivals[size_t(c)])));
      const auto& rounds = conversations[size_t(c)];
      for (size_t r = 0; r < rounds.size(); ++r) {
        {
          std::unique_lock<std::mutex> lock(mu);
          const uint64_t ticket = next_ticket++;
          cv.wait(lock, [&] { return ticket == serving && in_flight < limit; });
          ++serving;
          ++in_flight;
          out.peak_concurrency = std::max(out.peak_concurrency, in_flight);
          cv.notify_all();
        }
        RequestResult result = send(rounds[r]);
        std::lock_guard<std::mutex> lock(mu);
        out.results[offset[size_t(c)] + r] = std::move(result);
        --in_flight;
        ++done;
        if (options.on_progress) options.on_progress(done, int64_t(total));
        cv.notify_all();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  out.duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace tessera::bench
