#include "router/worker_set.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <random>

#include "base/logging.h"

namespace tessera::router {
namespace {

uint64_t RandomIndex(uint64_t n) {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return std::uniform_int_distribution<uint64_t>(0, n - 1)(gen);
}

}  // namespace

StatusOr<Policy> ParsePolicy(std::string_view name) {
  if (name == "round_robin") return Policy::kRoundRobin;
  if (name == "random") return Policy::kRandom;
  if (name == "cache_aware") return Policy::kCacheAware;
  if (name == "power_of_two") return Policy::kPowerOfTwo;
  return InvalidArgumentError(fmt::format(
      "unknown policy '{}'; use round_robin, random, cache_aware or "
      "power_of_two",
      name));
}

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kRoundRobin:
      return "round_robin";
    case Policy::kRandom:
      return "random";
    case Policy::kCacheAware:
      return "cache_aware";
    case Policy::kPowerOfTwo:
      return "power_of_two";
  }
  return "?";
}

const char* RoleName(WorkerRole role) {
  switch (role) {
    case WorkerRole::kRegular:
      return "regular";
    case WorkerRole::kPrefill:
      return "prefill";
    case WorkerRole::kDecode:
      return "decode";
  }
  return "?";
}

StatusOr<std::unique_ptr<Worker>> Worker::Create(const std::string& url,
                                                 WorkerRole role,
                                                 int bootstrap_port) {
  constexpr std::string_view kScheme = "http://";
  std::string_view rest(url);
  if (rest.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgumentError(fmt::format(
        "worker URL '{}' must look like http://HOST:PORT", url));
  }
  rest.remove_prefix(kScheme.size());
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos || colon == 0 ||
      rest.find('/') != std::string_view::npos) {
    return InvalidArgumentError(fmt::format(
        "worker URL '{}' must look like http://HOST:PORT", url));
  }
  int port = 0;
  try {
    port = std::stoi(std::string(rest.substr(colon + 1)));
  } catch (const std::exception&) {
    port = 0;
  }
  if (port < 1 || port > 65535) {
    return InvalidArgumentError(
        fmt::format("worker URL '{}' has no valid port", url));
  }
  if (role == WorkerRole::kPrefill &&
      (bootstrap_port < 1 || bootstrap_port > 65535)) {
    return InvalidArgumentError(fmt::format(
        "prefill worker {}: bootstrap port {} is not in [1, 65535]", url,
        bootstrap_port));
  }
  std::string host(rest.substr(0, colon));
  return std::unique_ptr<Worker>(new Worker(
      fmt::format("http://{}:{}", host, port), host, port, role, bootstrap_port));
}

void Worker::MarkDead(const std::string& why) {
  if (healthy_.exchange(false)) {
    TSR_LOG_WARN("router: {} worker {} is down ({}); routing around it",
                 RoleName(role_), url_, why);
  }
  failures_.store(0);
}

void Worker::RecordCheck(bool ok, int failure_threshold,
                         const std::string& why) {
  if (ok) {
    failures_.store(0);
    if (!healthy_.exchange(true)) {
      TSR_LOG_INFO("router: {} worker {} is healthy again", RoleName(role_),
                   url_);
    }
    return;
  }
  if (failures_.fetch_add(1) + 1 >= failure_threshold) MarkDead(why);
}

WorkerSet::WorkerSet(std::vector<std::unique_ptr<Worker>> workers,
                     PolicyOptions prefill_policy, PolicyOptions decode_policy)
    : workers_(std::move(workers)),
      prefill_policy_(prefill_policy),
      decode_policy_(decode_policy) {}

WorkerSet::~WorkerSet() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (health_.joinable()) health_.join();
}

bool WorkerSet::disaggregated() const {
  return std::any_of(workers_.begin(), workers_.end(), [](const auto& w) {
    return w->role() != WorkerRole::kRegular;
  });
}

std::vector<Worker*> WorkerSet::Of(WorkerRole role) const {
  std::vector<Worker*> out;
  for (const auto& w : workers_) {
    if (w->role() == role) out.push_back(w.get());
  }
  return out;
}

Worker* WorkerSet::Pick(WorkerRole role, std::string_view text,
                        const Worker* avoid) {
  std::vector<Worker*> healthy;
  for (Worker* w : Of(role)) {
    if (w->healthy()) healthy.push_back(w);
  }
  if (healthy.size() > 1 && avoid != nullptr) {
    healthy.erase(std::remove(healthy.begin(), healthy.end(), avoid),
                  healthy.end());
  }
  if (healthy.empty()) return nullptr;
  const PolicyOptions& p =
      role == WorkerRole::kDecode ? decode_policy_ : prefill_policy_;
  const uint64_t n = healthy.size();
  auto least_loaded = [&healthy] {
    return *std::min_element(healthy.begin(), healthy.end(),
                             [](Worker* a, Worker* b) {
                               return a->inflight() < b->inflight();
                             });
  };
  switch (p.policy) {
    case Policy::kRoundRobin:
      return healthy[round_robin_[static_cast<int>(role)].fetch_add(1) % n];
    case Policy::kRandom:
      return healthy[RandomIndex(n)];
    case Policy::kPowerOfTwo: {
      if (n == 1) return healthy[0];
      const uint64_t a = RandomIndex(n);
      uint64_t b = RandomIndex(n - 1);
      if (b >= a) ++b;
      return healthy[a]->inflight() <= healthy[b]->inflight() ? healthy[a]
                                                              : healthy[b];
    }
    case Policy::kCacheAware: {
      int64_t lo = healthy[0]->inflight(), hi = lo;
      for (Worker* w : healthy) {
        lo = std::min(lo, w->inflight());
        hi = std::max(hi, w->inflight());
      }
      Worker* chosen = nullptr;
      if (hi - lo > p.balance_abs_threshold &&
          static_cast<double>(hi) >
              static_cast<double>(lo) * p.balance_rel_threshold) {
        chosen = least_loaded();
      } else {
        size_t best = 0;
        for (Worker* w : healthy) {
          const size_t m = w->index().Match(text);
          if (chosen == nullptr || m > best) {
            chosen = w;
            best = m;
          }
        }
        const double ratio =
            text.empty() ? 0.0
                         : static_cast<double>(best) /
                               static_cast<double>(text.size());
        if (ratio <= p.cache_threshold) {
          chosen = *std::min_element(
              healthy.begin(), healthy.end(), [](Worker* a, Worker* b) {
                return a->index().size() < b->index().size();
              });
        }
      }
      chosen->index().Insert(text);
      return chosen;
    }
  }
  return healthy[0];
}

void WorkerSet::StartHealthChecks(std::chrono::milliseconds interval,
                                  int failure_threshold) {
  health_ = std::thread(
      [this, interval, failure_threshold] { HealthLoop(interval, failure_threshold); });
}

void WorkerSet::HealthLoop(std::chrono::milliseconds interval,
                           int failure_threshold) {
  for (;;) {
    for (const auto& w : workers_) {
      httplib::Client client(w->host(), w->port());
      client.set_connection_timeout(std::chrono::seconds(2));
      client.set_read_timeout(std::chrono::seconds(5));
      httplib::Result res = client.Get("/health");
      if (res && res->status == 200) {
        w->RecordCheck(true, failure_threshold, "");
      } else {
        w->RecordCheck(false, failure_threshold,
                       res ? fmt::format("/health answered {}", res->status)
                           : fmt::format("/health: {}",
                                         httplib::to_string(res.error())));
      }
    }
    MutexLock lock(&mu_);
    if (stop_) return;
    cv_.WaitFor(&mu_, interval);
    if (stop_) return;
  }
}

}  // namespace tessera::router
