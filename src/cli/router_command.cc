// tessera router: an OpenAI-compatible load balancer in front of Tessera
// servers, aggregated (--worker-urls) or PD-disaggregated (--prefill /
// --decode), with sgl-router's flags (src/router/router.h).
//
//   tessera router --prefill http://H:P [BOOTSTRAP_PORT] [--prefill ...]
//                  --decode http://H:P [--decode ...]
//                  [--policy cache_aware|round_robin|random|power_of_two]
//                  [--prefill-policy P] [--decode-policy P]
//                  [--host 127.0.0.1] [--port 30000]
//   tessera router --worker-urls http://H:P [http://H:P ...] [--policy ...]
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/logging.h"
#include "cli/cli_io.h"
#include "cli/command.h"
#include "router/router.h"
#include "router/worker_set.h"

namespace tessera::cli {
namespace {

struct RouterFlags {
  std::vector<std::vector<std::string>> prefill;  // URL [BOOTSTRAP_PORT]
  std::vector<std::string> decode;
  std::vector<std::string> worker_urls;
  std::string policy = "cache_aware";
  std::string prefill_policy;
  std::string decode_policy;
  double cache_threshold = 0.5;
  int64_t balance_abs_threshold = 32;
  double balance_rel_threshold = 1.0001;
  router::RouterOptions options;
};

StatusOr<router::PolicyOptions> PolicyFrom(const RouterFlags& f,
                                           const std::string& override_name,
                                           const char* flag) {
  router::PolicyOptions p;
  auto policy = router::ParsePolicy(override_name.empty() ? f.policy
                                                          : override_name);
  if (!policy.ok()) return policy.status().WithContext(flag);
  p.policy = *policy;
  p.cache_threshold = f.cache_threshold;
  p.balance_abs_threshold = f.balance_abs_threshold;
  p.balance_rel_threshold = f.balance_rel_threshold;
  return p;
}

StatusOr<std::unique_ptr<router::WorkerSet>> BuildWorkers(const RouterFlags& f) {
  std::vector<std::unique_ptr<router::Worker>> workers;
  const bool pd = !f.prefill.empty() || !f.decode.empty();
  if (pd && !f.worker_urls.empty()) {
    return InvalidArgumentError(
        "--worker-urls (aggregated workers) and --prefill/--decode "
        "(disaggregated) cannot be mixed; pick one");
  }
  if (pd && (f.prefill.empty() || f.decode.empty())) {
    return InvalidArgumentError(
        "PD disaggregation needs at least one --prefill and one --decode "
        "server");
  }
  if (!pd && f.worker_urls.empty()) {
    return InvalidArgumentError(
        "give the servers to route to: --worker-urls URL ... (aggregated) or "
        "--prefill URL [BOOTSTRAP_PORT] --decode URL (disaggregated)");
  }
  for (const auto& p : f.prefill) {
    if (p.empty() || p.size() > 2) {
      return InvalidArgumentError(
          "--prefill takes a URL and optionally its bootstrap port");
    }
    int bootstrap = 8998;
    if (p.size() == 2) {
      try {
        bootstrap = std::stoi(p[1]);
      } catch (const std::exception&) {
        return InvalidArgumentError(fmt::format(
            "--prefill {} {}: the bootstrap port must be a number", p[0], p[1]));
      }
    }
    TSR_ASSIGN_OR_RETURN(auto w, router::Worker::Create(
                                     p[0], router::WorkerRole::kPrefill, bootstrap));
    workers.push_back(std::move(w));
  }
  for (const auto& url : f.decode) {
    TSR_ASSIGN_OR_RETURN(auto w, router::Worker::Create(
                                     url, router::WorkerRole::kDecode, 0));
    workers.push_back(std::move(w));
  }
  for (const auto& url : f.worker_urls) {
    TSR_ASSIGN_OR_RETURN(auto w, router::Worker::Create(
                                     url, router::WorkerRole::kRegular, 0));
    workers.push_back(std::move(w));
  }
  TSR_ASSIGN_OR_RETURN(router::PolicyOptions prefill,
                       PolicyFrom(f, f.prefill_policy, "--prefill-policy"));
  TSR_ASSIGN_OR_RETURN(router::PolicyOptions decode,
                       PolicyFrom(f, f.decode_policy, "--decode-policy"));
  return std::make_unique<router::WorkerSet>(std::move(workers), prefill,
                                             decode);
}

int RunRouter(const RouterFlags& f) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (f.options.threads < 1 || f.options.max_retries < 0 ||
      f.options.request_timeout_s < 1) {
    return ReportError(InvalidArgumentError(
                           "--router-threads and --request-timeout-secs must "
                           "be positive, --retry-max-retries not negative"),
                       kExitBadInput);
  }
  auto workers = BuildWorkers(f);
  if (!workers.ok()) return ReportError(workers.status(), kExitBadInput);
  const bool pd = (*workers)->disaggregated();
  const size_t count = (*workers)->workers().size();
  auto router = router::Router::Create(f.options, std::move(*workers));
  if (!router.ok()) return ReportError(router.status(), kExitBadInput);
  router::Router* r = router->get();
  std::thread watcher([&signals, r] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (sig != 0) TSR_LOG_INFO("router: stopping");
    r->Stop();
  });
  TSR_LOG_INFO("router: {} workers ({}), policy {}; listening on http://{}:{}",
               count, pd ? "prefill/decode" : "aggregated", f.policy,
               f.options.host, r->port());
  r->Run();
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  return kExitOk;
}

}  // namespace

Command AddRouterCommand(CLI::App& root) {
  Command command;
  command.app = root.add_subcommand(
      "router",
      "route OpenAI requests over several servers: aggregated "
      "(--worker-urls) or prefill/decode disaggregated (--prefill/--decode)");
  auto f = std::make_shared<RouterFlags>();
  CLI::App* app = command.app;
  app->add_option("--prefill", f->prefill,
                  "a prefill server: URL [BOOTSTRAP_PORT] (default port "
                  "8998); repeat for more")
      ->expected(1, 2)
      ->allow_extra_args();
  app->add_option("--decode", f->decode, "a decode server URL; repeat for more");
  app->add_option("--worker-urls", f->worker_urls,
                  "aggregated servers (data parallel)")
      ->expected(1, -1);
  app->add_option("--policy", f->policy,
                  "cache_aware, round_robin, random or power_of_two")
      ->capture_default_str();
  app->add_option("--prefill-policy", f->prefill_policy,
                  "policy for prefill servers (default: --policy)");
  app->add_option("--decode-policy", f->decode_policy,
                  "policy for decode servers (default: --policy)");
  app->add_option("--cache-threshold", f->cache_threshold,
                  "cache_aware: prefix match ratio above which the matching "
                  "worker is chosen")
      ->capture_default_str();
  app->add_option("--balance-abs-threshold", f->balance_abs_threshold,
                  "cache_aware: in-flight difference that counts as "
                  "unbalanced")
      ->capture_default_str();
  app->add_option("--balance-rel-threshold", f->balance_rel_threshold,
                  "cache_aware: in-flight ratio that counts as unbalanced")
      ->capture_default_str();
  app->add_option("--host", f->options.host, "address to listen on")
      ->capture_default_str();
  app->add_option("--port", f->options.port, "port (0: any free port)")
      ->capture_default_str();
  app->add_option("--router-threads", f->options.threads,
                  "requests handled at once")
      ->capture_default_str();
  app->add_option("--retry-max-retries", f->options.max_retries,
                  "attempts on other workers when one cannot be reached")
      ->capture_default_str();
  app->add_option("--request-timeout-secs", f->options.request_timeout_s,
                  "longest wait for a worker's answer")
      ->capture_default_str();
  app->add_option("--health-check-interval-secs",
                  f->options.health_check_interval_s,
                  "seconds between health checks of every worker")
      ->capture_default_str();
  app->add_option("--health-failure-threshold",
                  f->options.health_failure_threshold,
                  "failed checks in a row before a worker is skipped")
      ->capture_default_str();
  command.run = [f] { return RunRouter(*f); };
  return command;
}

}  // namespace tessera::cli
