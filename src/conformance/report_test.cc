#include "conformance/report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tessera::conformance {
namespace {

TEST(ReportTest, LinesAndSummary) {
  EXPECT_EQ(FormatResultLine({"abi.struct_sizes", CheckStatus::kPass, ""}),
            "[PASS] abi.struct_sizes");
  EXPECT_EQ(FormatResultLine({"op.x", CheckStatus::kFail, "two\nlines"}),
            "[FAIL] op.x: two lines");
  std::vector<CheckResult> r = {{"a", CheckStatus::kPass, ""},
                                {"b", CheckStatus::kFail, "x"},
                                {"c", CheckStatus::kSkip, "y"},
                                {"d", CheckStatus::kPass, ""}};
  EXPECT_EQ(FormatSummary(CountResults(r)), "2 passed, 1 failed, 1 skipped");
}

TEST(ReportTest, Json) {
  std::vector<CheckResult> r = {{"a", CheckStatus::kPass, ""},
                                {"b", CheckStatus::kFail, "bad \"quote\""}};
  auto doc = nlohmann::json::parse(FormatJson("cpu", "/x/libcpu.so", r));
  EXPECT_EQ(doc["plugin"], "cpu");
  EXPECT_EQ(doc["path"], "/x/libcpu.so");
  EXPECT_EQ(doc["passed"], 1);
  EXPECT_EQ(doc["failed"], 1);
  EXPECT_EQ(doc["skipped"], 0);
  EXPECT_EQ(doc["checks"][1]["status"], "fail");
  EXPECT_EQ(doc["checks"][1]["message"], "bad \"quote\"");
}

}  // namespace
}  // namespace tessera::conformance
