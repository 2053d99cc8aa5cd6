#include "conformance/check_context.h"

#include <exception>

namespace tessera::conformance {

std::string_view CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "PASS";
    case CheckStatus::kFail:
      return "FAIL";
    case CheckStatus::kSkip:
      return "SKIP";
  }
  return "FAIL";
}

CheckContext::CheckContext(std::string group, const std::regex* filter,
                           int start_index, CheckSink* sink)
    : group_(std::move(group)),
      filter_(filter),
      start_index_(start_index),
      sink_(sink) {}

bool CheckContext::Selected(const std::string& name) const {
  return filter_ == nullptr || std::regex_search(name, *filter_);
}

bool CheckContext::WillRun(const std::string& name) const {
  return next_index_ >= start_index_ && Selected(name);
}

void CheckContext::Run(const std::string& name,
                       const std::function<Outcome()>& fn) {
  const int index = next_index_++;
  if (index < start_index_ || !Selected(name)) return;
  sink_->Begin(index, name);
  Outcome outcome;
  try {
    outcome = fn();
  } catch (const std::exception& e) {
    outcome = Fail(std::string("the check threw an exception: ") + e.what());
  } catch (...) {
    outcome = Fail("the check threw an unknown exception");
  }
  sink_->Result(index, CheckResult{name, outcome.status, outcome.message});
}

void CheckContext::Report(const std::string& name, Outcome outcome,
                          bool always) {
  const int index = next_index_++;
  if (index < start_index_ || (!always && !Selected(name))) return;
  sink_->Begin(index, name);
  sink_->Result(index, CheckResult{name, outcome.status, outcome.message});
}

}  // namespace tessera::conformance
