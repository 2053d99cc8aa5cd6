#include "conformance/runner.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

namespace tessera::conformance {
namespace {

using Clock = std::chrono::steady_clock;

// Writes group events to a pipe as JSON lines (in the child).
class PipeSink : public CheckSink {
 public:
  explicit PipeSink(int fd) : fd_(fd) {}
  void Begin(int index, const std::string& name) override {
    Write(nlohmann::json{{"begin", index}, {"name", name}});
  }
  void Done() { Write(nlohmann::json{{"done", true}}); }
  void Result(int index, const CheckResult& r) override {
    Write(nlohmann::json{{"result", index},
                         {"name", r.name},
                         {"status", std::string(CheckStatusName(r.status))},
                         {"message", r.message}});
  }

 private:
  void Write(const nlohmann::json& j) {
    std::string line =
        j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the parent is gone
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  int fd_;
};

// Runs the group in this process (no isolation).
class DirectSink : public CheckSink {
 public:
  DirectSink(std::vector<CheckResult>* out, const ResultCallback* cb)
      : out_(out), cb_(cb) {}
  void Begin(int, const std::string&) override {}
  void Result(int, const CheckResult& r) override {
    out_->push_back(r);
    if (*cb_) (*cb_)(r);
  }

 private:
  std::vector<CheckResult>* out_;
  const ResultCallback* cb_;
};

CheckStatus ParseStatus(const std::string& s) {
  if (s == "PASS") return CheckStatus::kPass;
  if (s == "SKIP") return CheckStatus::kSkip;
  return CheckStatus::kFail;
}

// What one child run of a group ended with.
struct ChildRun {
  int open_index = -1;  // a check begun but not finished (-1: none)
  std::string open_name;
  int last_index = -1;  // the last index seen
  std::string last_name;
  bool progress = false;  // any check began in this run
  bool done = false;      // the group's checks finished (teardown started)
  bool timed_out = false;
  int wait_status = 0;
};

ChildRun RunChild(const GroupSpec& group, const RunnerOptions& options,
                  int start_index, const ResultCallback& on_result,
                  std::vector<CheckResult>* results) {
  ChildRun run;
  int fds[2];
  if (pipe(fds) != 0) {
    CheckResult r{group.name + ".setup", CheckStatus::kFail,
                  fmt::format("pipe() failed: {}", std::strerror(errno))};
    results->push_back(r);
    if (on_result) on_result(r);
    return run;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    CheckResult r{group.name + ".setup", CheckStatus::kFail,
                  fmt::format("fork() failed: {}", std::strerror(errno))};
    results->push_back(r);
    if (on_result) on_result(r);
    return run;
  }
  if (pid == 0) {
    // Child: stdout belongs to the parent's report; send strays to stderr.
    close(fds[0]);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    PipeSink sink(fds[1]);
    const std::regex* filter = options.filter ? &*options.filter : nullptr;
    CheckContext ctx(group.name, filter, start_index, &sink);
    Outcome setup = group.setup ? group.setup() : Pass();
    if (setup.status == CheckStatus::kPass) {
      group.run(ctx);
    } else if (start_index == 0) {
      ctx.Report(group.name + ".setup", setup, /*always=*/true);
    }
    sink.Done();
    if (setup.status == CheckStatus::kPass && group.teardown) group.teardown();
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);

  std::string buffer;
  auto last_activity = Clock::now();
  const auto timeout = std::chrono::duration<double>(options.check_timeout_s);
  bool eof = false;
  while (!eof) {
    auto waited = Clock::now() - last_activity;
    if (waited >= timeout) {
      kill(pid, SIGKILL);
      run.timed_out = true;
      break;
    }
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(timeout - waited);
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[4096];
    ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
      break;
    }
    last_activity = Clock::now();
    buffer.append(chunk, static_cast<size_t>(n));
    size_t newline;
    while ((newline = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, newline);
      buffer.erase(0, newline + 1);
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      if (j.contains("done")) {
        run.done = true;
      } else if (j.contains("begin")) {
        run.progress = true;
        run.open_index = j["begin"].get<int>();
        run.open_name = j.value("name", "");
        run.last_index = run.open_index;
        run.last_name = run.open_name;
      } else if (j.contains("result")) {
        CheckResult r{j.value("name", ""), ParseStatus(j.value("status", "")),
                      j.value("message", "")};
        run.open_index = -1;
        run.last_index = j["result"].get<int>();
        run.last_name = r.name;
        results->push_back(r);
        if (on_result) on_result(r);
      }
    }
  }
  close(fds[0]);
  while (waitpid(pid, &run.wait_status, 0) < 0 && errno == EINTR) {
  }
  return run;
}

std::string DescribeExit(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return "crashed with " + DescribeSignal(WTERMSIG(wait_status));
  }
  if (WIFEXITED(wait_status)) {
    return fmt::format("exited with code {} (did the plugin call exit()?)",
                       WEXITSTATUS(wait_status));
  }
  return fmt::format("ended with wait status {}", wait_status);
}

Status DeadlineExceededOrInternal(double timeout_s) {
  return InternalError(fmt::format(
      "did not return within {:g} s; the kit killed it", timeout_s));
}

bool CleanExit(int wait_status) {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

}  // namespace

StatusOr<int> RunIsolated(const std::function<int()>& fn, double timeout_s) {
  int fds[2];
  if (pipe(fds) != 0)
    return InternalError(
        fmt::format("pipe() failed: {}", std::strerror(errno)));
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return InternalError(
        fmt::format("fork() failed: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    close(fds[0]);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    int value = fn();
    ssize_t ignored = write(fds[1], &value, sizeof(value));
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  int value = 0;
  size_t got = 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  while (got < sizeof(value)) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready <= 0) continue;
    ssize_t n = read(fds[0], reinterpret_cast<char*>(&value) + got,
                     sizeof(value) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return DeadlineExceededOrInternal(timeout_s);
  }
  if (got < sizeof(value)) {
    return InternalError("the process " + DescribeExit(status));
  }
  return value;
}

std::string DescribeSignal(int signal_number) {
  const char* abbrev = sigabbrev_np(signal_number);
  const char* text = strsignal(signal_number);
  return fmt::format("signal {} (SIG{}: {})", signal_number,
                     abbrev ? abbrev : "?", text ? text : "unknown");
}

std::vector<CheckResult> RunGroups(const std::vector<GroupSpec>& groups,
                                   const RunnerOptions& options,
                                   const ResultCallback& on_result) {
  std::vector<CheckResult> results;
  for (const GroupSpec& group : groups) {
    if (!options.isolate) {
      DirectSink sink(&results, &on_result);
      const std::regex* filter = options.filter ? &*options.filter : nullptr;
      CheckContext ctx(group.name, filter, 0, &sink);
      Outcome setup = group.setup ? group.setup() : Pass();
      if (setup.status != CheckStatus::kPass) {
        ctx.Report(group.name + ".setup", setup, /*always=*/true);
        continue;
      }
      group.run(ctx);
      if (group.teardown) group.teardown();
      continue;
    }
    int start_index = 0;
    for (int attempt = 0;; ++attempt) {
      ChildRun run = RunChild(group, options, start_index, on_result, &results);
      std::string why;
      if (run.timed_out) {
        why = fmt::format(
            "did not finish within {:g} s (the plugin hung or is far too "
            "slow); the kit killed it",
            options.check_timeout_s);
      } else if (!CleanExit(run.wait_status)) {
        why = "the check process " + DescribeExit(run.wait_status);
      } else if (!run.done || run.open_index >= 0) {
        why = "the check process stopped early";
      } else {
        break;  // the group finished
      }
      CheckResult r;
      r.status = CheckStatus::kFail;
      bool restart = true;
      if (run.open_index >= 0) {
        r.name = run.open_name;
        r.message = why + " during this check";
        start_index = run.open_index + 1;
      } else if (run.done) {
        r.name = group.name + ".teardown";
        r.message = why + " after the group's checks (in shutdown?)";
        restart = false;
      } else {
        r.name = group.name + ".process";
        r.message =
            why + (run.last_index < 0 ? " before its first check (in init?)"
                                      : fmt::format(" between checks, after {}",
                                                    run.last_name));
        start_index = run.last_index + 1;
        restart = run.progress;  // no progress: it would only repeat
      }
      results.push_back(r);
      if (on_result) on_result(r);
      if (!restart) break;
      if (attempt + 1 >= options.max_restarts) {
        CheckResult stop{group.name + ".restarts", CheckStatus::kFail,
                         fmt::format("gave up on group '{}' after {} crashes",
                                     group.name, options.max_restarts)};
        results.push_back(stop);
        if (on_result) on_result(stop);
        break;
      }
    }
  }
  return results;
}

}  // namespace tessera::conformance
