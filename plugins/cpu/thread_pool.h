// ThreadPool: a persistent set of helper threads that ops split their work
// across (one pool per virtual device; `threads=N` sizes it).
//
// ParallelFor(n, grain, fn) calls fn(begin, end) over disjoint ranges that
// cover [0, n) and returns when all ran. The calling thread (a stream
// worker) takes chunks too, so a pool of size 1 has no helper threads and
// runs everything inline, and a busy pool never stalls a caller. Several
// callers (streams) may use one pool at once; their chunks interleave.
// If chunks throw, the first exception is rethrown to the caller after
// every chunk finished. `fn` must not call ParallelFor on the same pool.
// Thread-safe. The destructor joins the helpers; no ParallelFor may be in
// flight then. An idle helper polls for new work for a short while (about
// kSpinMicros) before it sleeps, so back-to-back ops (a decode step runs
// hundreds of small ones) do not pay a wake-up each.
#ifndef TESSERA_PLUGINS_CPU_THREAD_POOL_H_
#define TESSERA_PLUGINS_CPU_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::cpu {

class ThreadPool {
 public:
  // `threads` >= 1 counts the caller: threads - 1 helpers are started.
  // `cpus` (may be empty: no pinning): the CPUs the helpers (and the
  // streams of this pool's device, PinCurrentThread) may run on.
  explicit ThreadPool(int threads, std::vector<int> cpus = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }
  const std::vector<int>& cpus() const { return cpus_; }
  // Restricts `thread` to cpus() (nothing when empty); false when the
  // system refused (the thread keeps its old mask). Called by the creator
  // right after starting it, so the pin is in place when it returns.
  bool Pin(std::thread& thread) const;

  // Splits [0, n) into chunks of at least `grain` items (grain >= 1), at
  // most 16 per thread, handed out in order from an atomic counter: the
  // last chunks even out the threads' finish (a decode GEMV's tail wait
  // is at most ~1/16 of a thread's share).
  void ParallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)>& fn);

 private:
  struct Job;
  void HelperLoop();
  static void RunChunks(Job& job);

  const int size_;
  const std::vector<int> cpus_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;  // guarded by mu_
  bool stop_ = false;                      // guarded by mu_
  std::vector<std::thread> helpers_;
  // Bumped (under mu_) at every push; idle helpers poll it before sleeping.
  std::atomic<uint64_t> pushes_{0};
};

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_THREAD_POOL_H_
