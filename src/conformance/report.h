// Formatting of conformance results: one text line per check, the summary
// line, and the --json document. Pure functions, thread-safe.
#ifndef TESSERA_CONFORMANCE_REPORT_H_
#define TESSERA_CONFORMANCE_REPORT_H_

#include <string>
#include <vector>

#include "conformance/check_context.h"

namespace tessera::conformance {

struct Counts {
  int passed = 0;
  int failed = 0;
  int skipped = 0;
};

Counts CountResults(const std::vector<CheckResult>& results);

// "[PASS] abi.struct_sizes", "[FAIL] op.add.f32.basic: message".
std::string FormatResultLine(const CheckResult& result);
// "3 passed, 1 failed, 0 skipped".
std::string FormatSummary(const Counts& counts);
// {"plugin", "path", "checks": [{"name", "status", "message"}], "passed",
//  "failed", "skipped"}, status in lower case ("pass", "fail", "skip").
std::string FormatJson(const std::string& plugin, const std::string& path,
                       const std::vector<CheckResult>& results);

}  // namespace tessera::conformance

#endif  // TESSERA_CONFORMANCE_REPORT_H_
