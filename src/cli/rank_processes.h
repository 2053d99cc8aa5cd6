// RankProcesses: the helper processes of a multi-rank command. Rank 0 is
// the calling process; ranks 1..n-1 are this binary re-executed
// (/proc/self/exe) with the given arguments plus `--rank r`. Each child
// gets PR_SET_PDEATHSIG(SIGKILL), so it dies with rank 0, and the
// destructor kills and reaps any child still running: no process outlives
// the command.
//
// Thread-safety: one thread owns a RankProcesses. Spawn forks from a
// process that may have threads, so the child only calls async-signal-safe
// functions before exec (everything is prepared before fork).
#ifndef TESSERA_CLI_RANK_PROCESSES_H_
#define TESSERA_CLI_RANK_PROCESSES_H_

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace tessera::cli {

class RankProcesses {
 public:
  RankProcesses() = default;
  RankProcesses(RankProcesses&& other) noexcept { *this = std::move(other); }
  RankProcesses& operator=(RankProcesses&& other) noexcept;
  ~RankProcesses() { KillAll(); }

  // Starts ranks 1..num_ranks-1 as `<this binary> args... --rank r`.
  static StatusOr<RankProcesses> Spawn(int num_ranks,
                                       const std::vector<std::string>& args);
  // The general form: rank r runs `<this binary> args_for(r)...` and
  // inherits descriptor inherit_fd(r) (>= 0; every other descriptor this
  // process opened with O_CLOEXEC stays closed in it).
  static StatusOr<RankProcesses> Spawn(
      int num_ranks,
      const std::function<std::vector<std::string>(int)>& args_for,
      const std::function<int(int)>& inherit_fd);

  int num_ranks() const { return static_cast<int>(pids_.size()) + 1; }

  // A rank that exited (reaped here), with its wait status; nullopt when
  // all still run. Never blocks.
  struct Exit {
    int rank;
    int wait_status;  // or kRemoteClosed
  };
  // An Exit's wait_status for a rank on another node whose connection
  // closed (its process is not ours to reap).
  static constexpr int kRemoteClosed = -1;
  std::optional<Exit> PollExited();
  // Waits up to timeout_s for every rank to exit; OK when all exited 0,
  // otherwise an error naming each rank that failed or did not exit.
  Status WaitAll(double timeout_s);
  // SIGKILL and reap every child still running.
  void KillAll();

  // "exit code 3", "signal 9 (Killed)", "its node's connection closed".
  static std::string DescribeWaitStatus(int wait_status);

 private:
  std::vector<pid_t> pids_;  // rank r's pid at r - 1; -1 once reaped
};

}  // namespace tessera::cli

#endif  // TESSERA_CLI_RANK_PROCESSES_H_
