#include "cli/rank_processes.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace tessera::cli {

RankProcesses& RankProcesses::operator=(RankProcesses&& other) noexcept {
  if (this != &other) {
    KillAll();
    pids_ = std::move(other.pids_);
    other.pids_.clear();
  }
  return *this;
}

StatusOr<RankProcesses> RankProcesses::Spawn(
    int num_ranks, const std::vector<std::string>& args) {
  return Spawn(
      num_ranks,
      [&args](int r) {
        std::vector<std::string> out = args;
        out.push_back("--rank");
        out.push_back(std::to_string(r));
        return out;
      },
      [](int) { return -1; });
}

StatusOr<RankProcesses> RankProcesses::Spawn(
    int num_ranks,
    const std::function<std::vector<std::string>(int)>& args_for,
    const std::function<int(int)>& inherit_fd) {
  RankProcesses out;
  const pid_t parent = getpid();
  for (int r = 1; r < num_ranks; ++r) {
    // Everything the child needs, built before fork.
    std::vector<std::string> strings = {"/proc/self/exe"};
    std::vector<std::string> args = args_for(r);
    strings.insert(strings.end(), args.begin(), args.end());
    const int keep_fd = inherit_fd(r);
    std::vector<char*> argv;
    for (std::string& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
      return InternalError(fmt::format("starting rank {}: fork() failed: {}",
                                       r, std::strerror(errno)));
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);  // rank 0 already gone
      if (keep_fd >= 0) {
        const int flags = fcntl(keep_fd, F_GETFD);
        if (flags >= 0) fcntl(keep_fd, F_SETFD, flags & ~FD_CLOEXEC);
      }
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    out.pids_.push_back(pid);
  }
  return out;
}

std::optional<RankProcesses::Exit> RankProcesses::PollExited() {
  for (size_t i = 0; i < pids_.size(); ++i) {
    if (pids_[i] < 0) continue;
    int status = 0;
    if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
      pids_[i] = -1;
      return Exit{static_cast<int>(i) + 1, status};
    }
  }
  return std::nullopt;
}

Status RankProcesses::WaitAll(double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration<double>(timeout_s);
  std::string problems;
  auto note = [&problems](const std::string& p) {
    problems += problems.empty() ? p : "; " + p;
  };
  for (;;) {
    while (auto exit = PollExited()) {
      if (!WIFEXITED(exit->wait_status) || WEXITSTATUS(exit->wait_status) != 0) {
        note(fmt::format("rank {} ended with {}", exit->rank,
                         DescribeWaitStatus(exit->wait_status)));
      }
    }
    bool running = false;
    for (pid_t pid : pids_) running |= pid >= 0;
    if (!running) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (pids_[i] >= 0) {
          note(fmt::format("rank {} did not exit within {:.0f} s (killed)",
                           i + 1, timeout_s));
        }
      }
      KillAll();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (problems.empty()) return OkStatus();
  return InternalError(problems);
}

void RankProcesses::KillAll() {
  for (pid_t& pid : pids_) {
    if (pid < 0) continue;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
}

std::string RankProcesses::DescribeWaitStatus(int wait_status) {
  if (wait_status == kRemoteClosed) return "its node's connection to rank 0 closed";
  if (WIFEXITED(wait_status)) {
    return fmt::format("exit code {}", WEXITSTATUS(wait_status));
  }
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = strsignal(sig);
    return fmt::format("signal {} ({})", sig, name ? name : "?");
  }
  return fmt::format("wait status {}", wait_status);
}

}  // namespace tessera::cli
