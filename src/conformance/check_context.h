// CheckContext: how a conformance check group runs its checks and reports
// them (one result per named check: PASS, FAIL or SKIP with a message).
//
// A group is a function `void Group(CheckContext& ctx, ...)` that calls
// ctx.Run("group.check_name", fn) once per check, in a deterministic order.
// Each Run() call gets the next index; the runner (runner.h) uses indices to
// resume a group after a check crashed its process, skipping the checks that
// already reported. Checks whose name does not match the --filter regex are
// neither run nor reported.
//
// Thread-compatible: one group runs on one thread (a check may start its
// own threads, but calls Run only from the group's thread).
#ifndef TESSERA_CONFORMANCE_CHECK_CONTEXT_H_
#define TESSERA_CONFORMANCE_CHECK_CONTEXT_H_

#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

namespace tessera::conformance {

enum class CheckStatus { kPass, kFail, kSkip };

// "PASS", "FAIL", "SKIP".
std::string_view CheckStatusName(CheckStatus status);

struct CheckResult {
  std::string name;
  CheckStatus status = CheckStatus::kPass;
  std::string message;  // why it failed or was skipped; may be empty on PASS
};

// What a check function returns.
struct Outcome {
  CheckStatus status = CheckStatus::kPass;
  std::string message;
};
inline Outcome Pass(std::string message = "") {
  return {CheckStatus::kPass, std::move(message)};
}
inline Outcome Fail(std::string message) {
  return {CheckStatus::kFail, std::move(message)};
}
inline Outcome Skip(std::string message) {
  return {CheckStatus::kSkip, std::move(message)};
}

// Receives what a group does, in order.
class CheckSink {
 public:
  virtual ~CheckSink() = default;
  // A check is about to run (its index in the group).
  virtual void Begin(int index, const std::string& name) = 0;
  virtual void Result(int index, const CheckResult& result) = 0;
};

class CheckContext {
 public:
  // `filter` (optional) selects checks by regex_search on the name; checks
  // with an index below `start_index` were already run and are skipped.
  CheckContext(std::string group, const std::regex* filter, int start_index,
               CheckSink* sink);

  const std::string& group() const { return group_; }

  // Runs `fn` as check `name` and reports its outcome. An exception thrown
  // by `fn` is a failed check.
  void Run(const std::string& name, const std::function<Outcome()>& fn);
  // Reports a check that needs no function (e.g. a failed group setup).
  // Setup failures (`always` = true) are reported even when filtered out.
  void Report(const std::string& name, Outcome outcome, bool always = false);

  // Whether Run(name, ..) would run (filter and start index), to skip
  // expensive preparation.
  bool WillRun(const std::string& name) const;

 private:
  bool Selected(const std::string& name) const;

  std::string group_;
  const std::regex* filter_;
  int start_index_;
  int next_index_ = 0;
  CheckSink* sink_;
};

}  // namespace tessera::conformance

#endif  // TESSERA_CONFORMANCE_CHECK_CONTEXT_H_
