#include "thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>

namespace tessera::cpu {
namespace {

// How long an idle helper polls for work. Ops inside a step follow one
// another within microseconds; past that the caller is doing host work
// (sampling, a server's HTTP and detokenizing) that the polling would take
// cores from: stories260k served at concurrency 64 on 2 vCPUs gains 8-10%
// against 100 us (docs/BENCHMARKS.md), one-batch decode is unchanged.
constexpr int kSpinMicros = 20;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

struct ThreadPool::Job {
  const std::function<void(int64_t, int64_t)>* fn;
  int64_t n;
  int64_t chunk;
  int64_t num_chunks;
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::condition_variable cv;
  int64_t done = 0;          // guarded by mu
  std::exception_ptr error;  // guarded by mu: the first chunk that threw
};

ThreadPool::ThreadPool(int threads, std::vector<int> cpus)
    : size_(std::max(threads, 1)), cpus_(std::move(cpus)) {
  helpers_.reserve(size_ - 1);
  for (int i = 1; i < size_; ++i) {
    helpers_.emplace_back([this] { HelperLoop(); });
    Pin(helpers_.back());
  }
}

bool ThreadPool::Pin(std::thread& thread) const {
  if (cpus_.empty()) return true;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus_) CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set) == 0;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void ThreadPool::RunChunks(Job& job) {
  int64_t ran = 0;
  std::exception_ptr error;
  for (;;) {
    int64_t c = job.next.fetch_add(1, std::memory_order_relaxed);
    if (c >= job.num_chunks) break;
    int64_t begin = c * job.chunk;
    int64_t end = std::min(job.n, begin + job.chunk);
    try {
      (*job.fn)(begin, end);
    } catch (...) {
      if (!error) error = std::current_exception();
    }
    ++ran;
  }
  if (ran == 0) return;
  std::lock_guard<std::mutex> lock(job.mu);
  if (error && !job.error) job.error = error;
  job.done += ran;
  if (job.done == job.num_chunks) job.cv.notify_all();
}

void ThreadPool::HelperLoop() {
  for (;;) {
    std::shared_ptr<Job> job;
    // Poll a little before sleeping: the next op usually follows at once.
    const uint64_t seen = pushes_.load(std::memory_order_acquire);
    const auto spin_end = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    while (pushes_.load(std::memory_order_acquire) == seen &&
           std::chrono::steady_clock::now() < spin_end) {
      for (int i = 0; i < 32; ++i) CpuRelax();
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = jobs_.front();
    }
    RunChunks(*job);
    std::lock_guard<std::mutex> lock(mu_);
    if (!jobs_.empty() && jobs_.front() == job) jobs_.pop_front();
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain,
                             const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t max_chunks = (n + grain - 1) / grain;
  int64_t num_chunks = std::min<int64_t>(max_chunks, int64_t{size_} * 16);
  if (size_ == 1 || num_chunks <= 1) {
    fn(0, n);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  job->chunk = (n + num_chunks - 1) / num_chunks;
  job->num_chunks = (n + job->chunk - 1) / job->chunk;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
    pushes_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  RunChunks(*job);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
  }
  std::unique_lock<std::mutex> lock(job->mu);
  job->cv.wait(lock, [&] { return job->done == job->num_chunks; });
  if (job->error) std::rethrow_exception(job->error);
}

}  // namespace tessera::cpu
