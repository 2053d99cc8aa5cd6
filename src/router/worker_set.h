// WorkerSet: the servers behind `tessera router` — their roles, health and
// load — and the policies that choose one per request (sgl-router's):
//   round_robin   the next healthy worker in turn;
//   random        a healthy worker at random;
//   power_of_two  two healthy workers at random, the one with fewer
//                 requests in flight;
//   cache_aware   the worker whose approximate prefix index (prefix_index.h)
//                 matches the request's text best, when the match covers
//                 more than cache_threshold of it; otherwise the worker
//                 whose index is smallest (most room); and whenever the
//                 load is unbalanced (max - min in flight >
//                 balance_abs_threshold and max > min *
//                 balance_rel_threshold) the least loaded one.
// Health: a thread GETs every worker's /health each interval; after
// failure_threshold failures in a row (or one failed request: MarkDead) a
// worker is skipped until a check succeeds again.
//
// Thread-safety: Pick, MarkDead and the accessors may be called from any
// thread (atomics and the indexes' own locks); the health thread runs
// between Start and the destructor.
#ifndef TESSERA_ROUTER_WORKER_SET_H_
#define TESSERA_ROUTER_WORKER_SET_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "router/prefix_index.h"

namespace tessera::router {

enum class Policy { kRoundRobin, kRandom, kCacheAware, kPowerOfTwo };
StatusOr<Policy> ParsePolicy(std::string_view name);
const char* PolicyName(Policy policy);

enum class WorkerRole { kRegular, kPrefill, kDecode };
const char* RoleName(WorkerRole role);

struct PolicyOptions {
  Policy policy = Policy::kCacheAware;
  double cache_threshold = 0.5;
  int64_t balance_abs_threshold = 32;
  double balance_rel_threshold = 1.0001;
};

class Worker {
 public:
  // `url`: http://HOST:PORT. InvalidArgument for anything else.
  static StatusOr<std::unique_ptr<Worker>> Create(const std::string& url,
                                                  WorkerRole role,
                                                  int bootstrap_port);

  const std::string& url() const { return url_; }
  const std::string& host() const { return host_; }
  int port() const { return port_; }
  WorkerRole role() const { return role_; }
  int bootstrap_port() const { return bootstrap_port_; }

  bool healthy() const { return healthy_.load(); }
  int64_t inflight() const { return inflight_.load(); }
  ApproxPrefixIndex& index() { return index_; }

  // A request failed to reach it: skipped until the next good check.
  void MarkDead(const std::string& why);
  // One health check's outcome.
  void RecordCheck(bool ok, int failure_threshold, const std::string& why);

  // Counts a request in flight for as long as it lives.
  class Load {
   public:
    explicit Load(Worker* w) : w_(w) { w_->inflight_.fetch_add(1); }
    ~Load() { w_->inflight_.fetch_sub(1); }
    Load(const Load&) = delete;
    Load& operator=(const Load&) = delete;

   private:
    Worker* w_;
  };

 private:
  Worker(std::string url, std::string host, int port, WorkerRole role,
         int bootstrap_port)
      : url_(std::move(url)),
        host_(std::move(host)),
        port_(port),
        role_(role),
        bootstrap_port_(bootstrap_port) {}

  const std::string url_;
  const std::string host_;
  const int port_;
  const WorkerRole role_;
  const int bootstrap_port_;
  std::atomic<bool> healthy_{true};
  std::atomic<int> failures_{0};
  std::atomic<int64_t> inflight_{0};
  ApproxPrefixIndex index_;
};

class WorkerSet {
 public:
  WorkerSet(std::vector<std::unique_ptr<Worker>> workers,
            PolicyOptions prefill_policy, PolicyOptions decode_policy);
  ~WorkerSet();  // stops the health thread

  // Starts the health checks.
  void StartHealthChecks(std::chrono::milliseconds interval,
                         int failure_threshold);

  // A healthy worker of `role` for a request whose text is `text`, not
  // `avoid` when another is healthy; nullptr when none is healthy. Prefill
  // and regular workers use the prefill policy, decode workers the decode
  // policy.
  Worker* Pick(WorkerRole role, std::string_view text,
               const Worker* avoid = nullptr);

  bool disaggregated() const;
  const std::vector<std::unique_ptr<Worker>>& workers() const {
    return workers_;
  }
  std::vector<Worker*> Of(WorkerRole role) const;

 private:
  void HealthLoop(std::chrono::milliseconds interval, int failure_threshold);

  std::vector<std::unique_ptr<Worker>> workers_;
  const PolicyOptions prefill_policy_;
  const PolicyOptions decode_policy_;
  std::atomic<uint64_t> round_robin_[3] = {0, 0, 0};
  Mutex mu_;
  CondVar cv_;
  bool stop_ TSR_GUARDED_BY(mu_) = false;
  std::thread health_;
};

}  // namespace tessera::router

#endif  // TESSERA_ROUTER_WORKER_SET_H_
