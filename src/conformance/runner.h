// The check runner: runs conformance check groups, each in its own forked
// child process, so a plugin that crashes or hangs fails one check instead
// of killing the kit.
//
// Protocol: the child runs the group with a CheckContext whose sink writes
// one JSON line per event ({"begin": i, "name": ..} before a check,
// {"result": i, "name", "status", "message"} after it, {"done": true} when
// the group's checks are over and teardown starts) to a pipe. The parent
// reads the pipe; when the child dies by a signal (or exits) inside a check,
// that check is reported FAILED naming the signal, and the group is started
// again in a fresh child from the check after it. A check that sends nothing
// for `check_timeout_s` is killed (SIGKILL) and reported FAILED the same way.
//
// Thread-safety: RunGroups must be called from a single-threaded process
// (fork); the callback runs on the calling thread.
#ifndef TESSERA_CONFORMANCE_RUNNER_H_
#define TESSERA_CONFORMANCE_RUNNER_H_

#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "base/status.h"
#include "conformance/check_context.h"

namespace tessera::conformance {

struct GroupSpec {
  std::string name;  // "abi", "ops", ...
  // Optional, in the child before `run` (e.g. the plugin's init). A failure
  // is reported as the check "<name>.setup" and the group does not run.
  std::function<Outcome()> setup;
  std::function<void(CheckContext&)> run;
  // Optional, in the child after `run` (e.g. the plugin's shutdown).
  std::function<void()> teardown;
};

struct RunnerOptions {
  std::optional<std::regex> filter;  // select checks by name
  double check_timeout_s = 300;      // per check, in the child
  bool isolate = true;               // false: run groups in this process
  int max_restarts = 64;             // per group, after crashes/timeouts
};

using ResultCallback = std::function<void(const CheckResult&)>;

// Runs `groups` in order; `on_result` (may be empty) sees every result as it
// arrives. Returns all results in order.
std::vector<CheckResult> RunGroups(const std::vector<GroupSpec>& groups,
                                   const RunnerOptions& options,
                                   const ResultCallback& on_result);

// Runs `fn` in a forked child and returns its int result, or an error
// naming the signal or exit code when the child dies first. For calls into a
// plugin that must not happen in the parent (a GPU driver initialised in
// the parent does not survive fork in the children).
StatusOr<int> RunIsolated(const std::function<int()>& fn, double timeout_s);

// "signal 11 (SIGSEGV: Segmentation fault)".
std::string DescribeSignal(int signal_number);

}  // namespace tessera::conformance

#endif  // TESSERA_CONFORMANCE_RUNNER_H_
