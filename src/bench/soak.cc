#include "bench/soak.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/bounded_json.h"
#include "bench/http_endpoint.h"
#include "bench/seeded_random.h"
#include "bench/server_probe.h"

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;
using OrderedJson = nlohmann::ordered_json;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kRssFloorMiB = 2.0;
constexpr double kFdSlack = 8;
constexpr double kThreadSlack = 4;
constexpr int kIdleWaitS = 30;

enum class Outcome { kOk, kRefused, kError, kLost, kDisconnect, kAbort };

struct Counts {
  std::atomic<int64_t> ok{0}, refused{0}, errors{0}, lost{0}, disconnects{0},
      aborts{0};
  std::mutex mu;
  std::vector<std::string> first_problems;  // guarded by mu (at most 5)

  void Record(Outcome outcome, const std::string& why) {
    switch (outcome) {
      case Outcome::kOk: ++ok; return;
      case Outcome::kRefused: ++refused; return;
      case Outcome::kDisconnect: ++disconnects; return;
      case Outcome::kAbort: ++aborts; return;
      case Outcome::kError: ++errors; break;
      case Outcome::kLost: ++lost; break;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (first_problems.size() < 5) first_problems.push_back(why);
  }
  int64_t total() const {
    return ok + refused + errors + lost + disconnects + aborts;
  }
};

struct Sample {
  double t = 0;
  double rss_bytes = 0;
  double open_fds = 0;
  double threads = 0;
};

// The process_* gauges of a /metrics text; false when one is missing.
bool ParseProcessGauges(const std::string& text, Sample* sample) {
  int found = 0;
  std::istringstream in(text);
  std::string line;
  auto value_of = [&](const char* name, double* out) {
    const size_t n = std::strlen(name);
    if (line.compare(0, n, name) == 0 && line.size() > n && line[n] == ' ') {
      *out = std::strtod(line.c_str() + n + 1, nullptr);
      ++found;
    }
  };
  while (std::getline(in, line)) {
    value_of("process_resident_memory_bytes", &sample->rss_bytes);
    value_of("process_open_fds", &sample->open_fds);
    value_of("process_threads", &sample->threads);
  }
  return found == 3;
}

class SoakRun {
 public:
  SoakRun(const SoakConfig& config, Endpoint endpoint, std::string model)
      : config_(config), endpoint_(std::move(endpoint)), model_(std::move(model)) {}

  SoakReport Run();

 private:
  void Worker(int64_t index);
  Outcome Normal(SeededRandom& rng, std::string* why);
  Outcome Disconnect(SeededRandom& rng, std::string* why);
  Outcome Abort(SeededRandom& rng, int64_t worker, int64_t n, std::string* why);
  bool TakeSample(double t, Sample* sample);
  bool WaitIdle();

  std::unique_ptr<httplib::Client> NewClient(double read_timeout_s) const {
    auto client = std::make_unique<httplib::Client>(endpoint_.origin);
    client->set_connection_timeout(30);
    client->set_write_timeout(60);
    const auto us = static_cast<int64_t>(read_timeout_s * 1e6);
    client->set_read_timeout(us / 1000000, us % 1000000);
    return client;
  }
  std::string Path(const char* path) const { return endpoint_.path_prefix + path; }
  OrderedJson Body(SeededRandom& rng, bool chat, bool stream) const;

  const SoakConfig& config_;
  const Endpoint endpoint_;
  const std::string model_;
  Clock::time_point end_;
  Counts counts_;
};

OrderedJson SoakRun::Body(SeededRandom& rng, bool chat, bool stream) const {
  const std::string text = fmt::format(
      "Tell me a story about the number {} and a {}.", rng.UniformInt(0, 9999),
      rng.UniformInt(0, 1) ? "cat" : "lighthouse");
  OrderedJson body = {{"model", model_},
               {"max_tokens", rng.UniformInt(1, 48)},
               {"temperature", 0.8},
               {"seed", rng.UniformInt(0, 1 << 30)},
               {"stream", stream}};
  if (chat) {
    body["messages"] = OrderedJson::array({{{"role", "user"}, {"content", text}}});
  } else {
    body["prompt"] = text;
  }
  return body;
}

// A whole request: an answer (200, or 503 when the server is full) or an
// error answer; no answer at all is lost.
Outcome SoakRun::Normal(SeededRandom& rng, std::string* why) {
  const bool chat = rng.UniformInt(0, 1) == 1;
  const bool stream = rng.UniformInt(0, 1) == 1;
  const char* path = chat ? "/v1/chat/completions" : "/v1/completions";
  auto client = NewClient(300);
  int status = -1;
  std::string body;
  httplib::Request req;
  req.method = "POST";
  req.path = Path(path);
  req.body = Body(rng, chat, stream).dump();
  req.set_header("Content-Type", "application/json");
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    body.append(data, n);
    return true;
  };
  const auto result = client->send(req);
  if (status < 0 || (!result && status == 200)) {
    *why = fmt::format("{} {}: no answer ({})", path,
                       stream ? "stream" : "whole",
                       httplib::to_string(result.error()));
    return Outcome::kLost;
  }
  if (status == 503) return Outcome::kRefused;
  if (status != 200) {
    *why = fmt::format("{}: HTTP {}: {}", path, status,
                       ErrorMessageFromBody(body));
    return Outcome::kError;
  }
  const bool complete = stream ? body.find("data: [DONE]") != std::string::npos
                               : body.find("\"choices\"") != std::string::npos;
  if (!complete) {
    *why = fmt::format("{} {}: the answer ended early ({} bytes)", path,
                       stream ? "stream" : "whole", body.size());
    return Outcome::kLost;
  }
  return Outcome::kOk;
}

// A client that goes away: a stream hung up after its first event, or a
// whole answer abandoned after 200 ms.
Outcome SoakRun::Disconnect(SeededRandom& rng, std::string* /*why*/) {
  const bool stream = rng.UniformInt(0, 1) == 1;
  auto client = NewClient(stream ? 300 : 0.2);
  httplib::Request req;
  req.method = "POST";
  req.path = Path("/v1/chat/completions");
  OrderedJson body = Body(rng, true, stream);
  body["max_tokens"] = 256;
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) {
    return !stream;  // a stream hangs up at its first bytes
  };
  (void)client->send(req);
  return Outcome::kDisconnect;
}

// A /generate stream with a rid, aborted through /abort_request after its
// first event; it must still end (with finish_reason abort, or normally
// when it finished first).
Outcome SoakRun::Abort(SeededRandom& rng, int64_t worker, int64_t n,
                       std::string* why) {
  const std::string rid = fmt::format("soak-{}-{}", worker, n);
  const OrderedJson body = {{"text", fmt::format("Count to {}.", rng.UniformInt(5, 50))},
                     {"rid", rid},
                     {"stream", true},
                     {"sampling_params",
                      {{"max_new_tokens", 256}, {"temperature", 0.8}}}};
  auto client = NewClient(300);
  bool sent_abort = false;
  std::string text;
  httplib::Request req;
  req.method = "POST";
  req.path = Path("/generate");
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  int status = -1;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t,
                             uint64_t) {
    text.append(data, len);
    if (!sent_abort && text.find("data:") != std::string::npos) {
      sent_abort = true;
      auto aborter = NewClient(30);
      (void)aborter->Post(Path("/abort_request"),
                          OrderedJson{{"rid", rid}}.dump(), "application/json");
    }
    return true;
  };
  const auto result = client->send(req);
  if (status == 503) return Outcome::kRefused;
  if (status != 200 || text.find("data: [DONE]") == std::string::npos) {
    *why = fmt::format("/generate aborted stream: HTTP {}, {} bytes, {}",
                       status, text.size(), httplib::to_string(result.error()));
    return status < 0 ? Outcome::kLost : Outcome::kError;
  }
  return Outcome::kAbort;
}

void SoakRun::Worker(int64_t index) {
  SeededRandom rng(config_.seed * 1000003 + static_cast<uint64_t>(index));
  int64_t n = 0;
  while (Clock::now() < end_) {
    const double draw = rng.UniformReal();
    std::string why;
    Outcome outcome;
    if (draw < config_.abort_fraction) {
      outcome = Abort(rng, index, n, &why);
    } else if (draw < config_.abort_fraction + config_.disconnect_fraction) {
      outcome = Disconnect(rng, &why);
    } else {
      outcome = Normal(rng, &why);
    }
    counts_.Record(outcome, why);
    ++n;
  }
}

bool SoakRun::TakeSample(double t, Sample* sample) {
  auto reply = HttpGet(endpoint_, "/metrics", 30);
  sample->t = t;
  return reply.ok() && reply->status == 200 &&
         ParseProcessGauges(reply->body, sample);
}

bool SoakRun::WaitIdle() {
  const auto deadline = Clock::now() + std::chrono::seconds(kIdleWaitS);
  while (Clock::now() < deadline) {
    auto reply = HttpGet(endpoint_, "/server_info", 30);
    if (reply.ok() && reply->status == 200) {
      auto info = ParseBoundedJson(reply->body);
      if (info.ok() && info->contains("state")) {
        const auto& s = (*info)["state"];
        if (s.value("running_requests", -1) == 0 &&
            s.value("queued_requests", -1) == 0 &&
            s.value("kv_used_tokens", -1) == 0) {
          return true;
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

SoakReport SoakRun::Run() {
  SoakReport report;
  const double interval =
      config_.sample_interval_s > 0
          ? config_.sample_interval_s
          : std::clamp(config_.seconds / 30.0, 1.0, 10.0);
  const auto start = Clock::now();
  end_ = start + std::chrono::milliseconds(
                     static_cast<int64_t>(config_.seconds * 1000));
  std::vector<Sample> samples;
  int metric_failures = 0;
  Sample first;
  if (TakeSample(0, &first)) {
    samples.push_back(first);
  } else {
    ++metric_failures;
  }
  std::vector<std::thread> workers;
  for (int64_t i = 0; i < config_.concurrency; ++i) {
    workers.emplace_back([this, i] { Worker(i); });
  }
  for (double next = interval; Clock::now() < end_; next += interval) {
    std::this_thread::sleep_until(
        start + std::chrono::milliseconds(static_cast<int64_t>(next * 1000)));
    if (Clock::now() >= end_) break;
    Sample s;
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (TakeSample(t, &s)) {
      samples.push_back(s);
    } else {
      ++metric_failures;
    }
    if (config_.progress) {
      std::fprintf(stderr,
                   "\rsoak %5.0f/%.0f s: %lld requests, RSS %.1f MiB, %g fds, "
                   "%g threads   ",
                   t, config_.seconds,
                   static_cast<long long>(counts_.total()),
                   s.rss_bytes / kMiB, s.open_fds, s.threads);
    }
  }
  for (auto& w : workers) w.join();
  if (config_.progress) std::fprintf(stderr, "\n");
  const bool idle = WaitIdle();
  Sample after;
  const bool have_after = TakeSample(
      std::chrono::duration<double>(Clock::now() - start).count(), &after);
  if (!have_after) ++metric_failures;

  // The trend of each figure over the second half of the load.
  std::vector<double> t, rss, fds, threads;
  for (const Sample& s : samples) {
    if (s.t < config_.seconds / 2) continue;
    t.push_back(s.t);
    rss.push_back(s.rss_bytes / kMiB);
    fds.push_back(s.open_fds);
    threads.push_back(s.threads);
  }
  const double half = config_.seconds / 2;
  const double rss_slope = FitSlope(t, rss);  // MiB/s
  const double rss_per_10min = rss_slope * 600;
  const double fd_growth = FitSlope(t, fds) * half;
  const double thread_growth = FitSlope(t, threads) * half;

  auto& failures = report.failures;
  if (counts_.lost > 0 || counts_.errors > 0) {
    std::lock_guard<std::mutex> lock(counts_.mu);
    failures.push_back(fmt::format(
        "{} request(s) lost and {} answered with an error; first: {}",
        counts_.lost.load(), counts_.errors.load(),
        counts_.first_problems.empty() ? "?" : counts_.first_problems[0]));
  }
  if (rss_per_10min > config_.max_rss_growth_mib_per_10min &&
      rss_slope * half > kRssFloorMiB) {
    failures.push_back(fmt::format(
        "resident memory grew {:.2f} MiB per 10 min over the second half "
        "(limit {:.2f})",
        rss_per_10min, config_.max_rss_growth_mib_per_10min));
  }
  if (fd_growth > static_cast<double>(config_.concurrency) + kFdSlack) {
    failures.push_back(fmt::format(
        "open descriptors grew by {:.1f} over the second half", fd_growth));
  }
  if (thread_growth > kThreadSlack) {
    failures.push_back(fmt::format(
        "threads grew by {:.1f} over the second half", thread_growth));
  }
  if (!samples.empty() && have_after) {
    if (after.open_fds > samples.front().open_fds + kFdSlack) {
      failures.push_back(fmt::format(
          "idle after the load, the server holds {} descriptors; it held {} "
          "before",
          after.open_fds, samples.front().open_fds));
    }
    if (after.threads > samples.front().threads + kThreadSlack) {
      failures.push_back(fmt::format(
          "idle after the load, the server runs {} threads; it ran {} before",
          after.threads, samples.front().threads));
    }
  }
  if (!idle) {
    failures.push_back(fmt::format(
        "the server was not idle (requests running or queued, or KV in use) "
        "{} s after the load stopped",
        kIdleWaitS));
  }
  if (metric_failures > 0) {
    failures.push_back(fmt::format(
        "{} /metrics read(s) failed or lacked the process_* gauges",
        metric_failures));
  }
  report.passed = failures.empty();

  OrderedJson& r = report.result;
  r["benchmark"] = "soak";
  r["base_url"] = endpoint_.Url();
  r["model"] = model_;
  r["seconds"] = config_.seconds;
  r["concurrency"] = config_.concurrency;
  r["seed"] = config_.seed;
  r["requests"] = {{"total", counts_.total()},
                   {"ok", counts_.ok.load()},
                   {"refused", counts_.refused.load()},
                   {"errors", counts_.errors.load()},
                   {"lost", counts_.lost.load()},
                   {"disconnects", counts_.disconnects.load()},
                   {"aborts", counts_.aborts.load()}};
  const Sample* front = samples.empty() ? nullptr : &samples.front();
  const Sample* back = samples.empty() ? nullptr : &samples.back();
  auto figure = [&](double Sample::*field, double scale) -> OrderedJson {
    return front ? OrderedJson((*front).*field / scale) : OrderedJson(nullptr);
  };
  auto last = [&](double Sample::*field, double scale) -> OrderedJson {
    return back ? OrderedJson((*back).*field / scale) : OrderedJson(nullptr);
  };
  r["resident_memory"] = {{"start_mib", figure(&Sample::rss_bytes, kMiB)},
                          {"end_mib", last(&Sample::rss_bytes, kMiB)},
                          {"slope_mib_per_10min", rss_per_10min}};
  r["open_fds"] = {{"start", figure(&Sample::open_fds, 1)},
                   {"end", last(&Sample::open_fds, 1)},
                   {"idle", have_after ? OrderedJson(after.open_fds) : OrderedJson(nullptr)},
                   {"second_half_growth", fd_growth}};
  r["threads"] = {{"start", figure(&Sample::threads, 1)},
                  {"end", last(&Sample::threads, 1)},
                  {"idle", have_after ? OrderedJson(after.threads) : OrderedJson(nullptr)},
                  {"second_half_growth", thread_growth}};
  OrderedJson series = OrderedJson::array();
  for (const Sample& s : samples) {
    series.push_back({{"t", std::round(s.t * 10) / 10},
                      {"rss_mib", std::round(s.rss_bytes / kMiB * 100) / 100},
                      {"open_fds", s.open_fds},
                      {"threads", s.threads}});
  }
  r["samples"] = std::move(series);
  r["passed"] = report.passed;
  r["failures"] = report.failures;
  return report;
}

}  // namespace

double FitSlope(const std::vector<double>& t, const std::vector<double>& y) {
  const size_t n = std::min(t.size(), y.size());
  if (n < 2) return 0;
  double mt = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mt += t[i];
    my += y[i];
  }
  mt /= double(n);
  my /= double(n);
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (t[i] - mt) * (y[i] - my);
    den += (t[i] - mt) * (t[i] - mt);
  }
  return den > 0 ? num / den : 0;
}

StatusOr<SoakReport> RunSoak(const SoakConfig& config) {
  if (!(config.seconds > 0) || config.concurrency < 1 ||
      config.disconnect_fraction < 0 || config.abort_fraction < 0 ||
      config.disconnect_fraction + config.abort_fraction > 1) {
    return InvalidArgumentError(
        "--soak needs SECONDS > 0, --max-concurrency >= 1 and disconnect + "
        "abort fractions within [0, 1]");
  }
  TSR_ASSIGN_OR_RETURN(Endpoint endpoint, ParseBaseUrl(config.base_url));
  TSR_ASSIGN_OR_RETURN(ServerInfo info, ProbeServer(endpoint));
  TSR_ASSIGN_OR_RETURN(ServedModel model, ChooseModel(info, config.model));
  SoakRun run(config, std::move(endpoint), model.id);
  return run.Run();
}

}  // namespace tessera::bench
