#include "bench/load_generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

#include "bench/seeded_random.h"

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The shared state of one RunLoad: a queue of arrived requests that worker
// threads drain, first come, first served.
class LoadRun {
 public:
  LoadRun(const std::vector<BenchRequest>& requests, const SendFn& send,
          const LoadOptions& options)
      : requests_(requests), send_(send), options_(options) {
    results_.resize(requests.size());
  }

  StatusOr<LoadResult> Run() {
    const int64_t n = int64_t(requests_.size());
    const std::vector<double> arrivals =
        ArrivalTimes(n, options_.request_rate, options_.seed);
    const size_t max_workers = size_t(
        options_.max_concurrency > 0 ? std::min(options_.max_concurrency, n)
                                     : n);
    std::vector<std::thread> workers;
    workers.reserve(max_workers);
    Status spawn_error;
    const Clock::time_point start = Clock::now();
    for (int64_t i = 0; i < n; ++i) {
      std::this_thread::sleep_until(
          start + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(arrivals[size_t(i)])));
      std::unique_lock<std::mutex> lock(mu_);
      ready_.push_back(size_t(i));
      // Every idle worker may already be spoken for by an earlier arrival;
      // start one more while the limit allows.
      if (int64_t(ready_.size()) > idle_ && workers.size() < max_workers) {
        try {
          workers.emplace_back([this] { Work(); });
          continue;
        } catch (const std::system_error& e) {
          if (workers.empty()) {
            spawn_error = InternalError(fmt::format(
                "cannot start a request thread ({}); lower --max-concurrency",
                e.what()));
            break;
          }
          // The running workers pick the request up when one is free.
        }
      }
      cv_.notify_one();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      all_arrived_ = true;
      if (!spawn_error.ok()) ready_.clear();
    }
    cv_.notify_all();
    for (std::thread& worker : workers) worker.join();
    if (!spawn_error.ok()) return spawn_error;

    LoadResult out;
    out.duration_s =
        std::chrono::duration<double>(Clock::now() - start).count();
    out.results = std::move(results_);
    out.peak_concurrency = peak_;
    return out;
  }

 private:
  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!ready_.empty()) {
        const size_t i = ready_.front();
        ready_.pop_front();
        peak_ = std::max(peak_, ++in_flight_);
        lock.unlock();
        RequestResult result = send_(requests_[i]);
        lock.lock();
        results_[i] = std::move(result);
        --in_flight_;
        ++done_;
        if (options_.on_progress) {
          options_.on_progress(done_, int64_t(requests_.size()));
        }
        continue;
      }
      if (all_arrived_) return;
      ++idle_;
      cv_.wait(lock);
      --idle_;
    }
  }

  const std::vector<BenchRequest>& requests_;
  const SendFn& send_;
  const LoadOptions& options_;

  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::deque<size_t> ready_;            // arrived, not yet sent
  std::vector<RequestResult> results_;  // (requests,) by request index
  bool all_arrived_ = false;
  int64_t idle_ = 0;       // workers waiting on cv_
  int64_t in_flight_ = 0;  // requests inside send_
  int64_t peak_ = 0;
  int64_t done_ = 0;
};

}  // namespace

std::vector<double> ArrivalTimes(int64_t count, double request_rate,
                                 uint64_t seed) {
  std::vector<double> times(size_t(std::max<int64_t>(count, 0)), 0.0);
  if (std::isinf(request_rate)) return times;
  SeededRandom rng(seed);
  for (size_t i = 1; i < times.size(); ++i) {
    times[i] = times[i - 1] + rng.Exponential(request_rate);
  }
  return times;
}

StatusOr<LoadResult> RunLoad(const std::vector<BenchRequest>& requests,
                             const SendFn& send, const LoadOptions& options) {
  if (!(options.request_rate > 0.0)) {
    return InvalidArgumentError(fmt::format(
        "--request-rate is {}; it must be > 0 requests/s, or inf",
        options.request_rate));
  }
  if (requests.empty()) return LoadResult{};
  LoadRun run(requests, send, options);
  return run.Run();
}

}  // namespace tessera::bench
