#include "conformance/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace tessera::conformance {

Counts CountResults(const std::vector<CheckResult>& results) {
  Counts c;
  for (const CheckResult& r : results) {
    switch (r.status) {
      case CheckStatus::kPass:
        ++c.passed;
        break;
      case CheckStatus::kFail:
        ++c.failed;
        break;
      case CheckStatus::kSkip:
        ++c.skipped;
        break;
    }
  }
  return c;
}

std::string FormatResultLine(const CheckResult& result) {
  std::string message = result.message;
  std::replace(message.begin(), message.end(), '\n', ' ');
  if (message.empty()) {
    return fmt::format("[{}] {}", CheckStatusName(result.status), result.name);
  }
  return fmt::format("[{}] {}: {}", CheckStatusName(result.status), result.name,
                     message);
}

std::string FormatSummary(const Counts& counts) {
  return fmt::format("{} passed, {} failed, {} skipped", counts.passed,
                     counts.failed, counts.skipped);
}

std::string FormatJson(const std::string& plugin, const std::string& path,
                       const std::vector<CheckResult>& results) {
  // ordered_json keeps the documented key order.
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const CheckResult& r : results) {
    std::string status(CheckStatusName(r.status));
    std::transform(status.begin(), status.end(), status.begin(),
                   [](unsigned char ch) { return std::tolower(ch); });
    nlohmann::ordered_json check;
    check["name"] = r.name;
    check["status"] = status;
    check["message"] = r.message;
    checks.push_back(std::move(check));
  }
  Counts c = CountResults(results);
  nlohmann::ordered_json doc;
  doc["plugin"] = plugin;
  doc["path"] = path;
  doc["checks"] = std::move(checks);
  doc["passed"] = c.passed;
  doc["failed"] = c.failed;
  doc["skipped"] = c.skipped;
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tessera::conformance
