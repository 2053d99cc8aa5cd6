#include "conformance/runner.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace tessera::conformance {
namespace {

GroupSpec Group(std::string name, std::function<void(CheckContext&)> run) {
  GroupSpec g;
  g.name = std::move(name);
  g.run = std::move(run);
  return g;
}

std::vector<CheckResult> RunAll(std::vector<GroupSpec> groups,
                                RunnerOptions options = {}) {
  return RunGroups(groups, options, nullptr);
}

TEST(RunnerTest, ReportsEveryCheckInOrder) {
  auto results = RunAll({Group("g", [](CheckContext& ctx) {
    ctx.Run("g.a", [] { return Pass(); });
    ctx.Run("g.b", [] { return Fail("broken"); });
    ctx.Run("g.c", [] { return Skip("not here"); });
  })});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].name, "g.a");
  EXPECT_EQ(results[1].status, CheckStatus::kFail);
  EXPECT_EQ(results[1].message, "broken");
  EXPECT_EQ(results[2].status, CheckStatus::kSkip);
}

TEST(RunnerTest, FilterSelectsByName) {
  RunnerOptions options;
  options.filter.emplace("\\.b");
  auto results =
      RunAll({Group("g",
                    [](CheckContext& ctx) {
                      ctx.Run("g.a", [] { return Fail("must not run"); });
                      ctx.Run("g.b", [] { return Pass(); });
                    })},
             options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].name, "g.b");
}

TEST(RunnerTest, CrashFailsOneCheckAndTheGroupGoesOn) {
  auto results = RunAll({Group("g", [](CheckContext& ctx) {
    ctx.Run("g.before", [] { return Pass(); });
    ctx.Run("g.crash", []() -> Outcome {
      raise(SIGSEGV);
      return Pass();
    });
    ctx.Run("g.after", [] { return Pass(); });
  })});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, CheckStatus::kPass);
  EXPECT_EQ(results[1].name, "g.crash");
  EXPECT_EQ(results[1].status, CheckStatus::kFail);
  EXPECT_NE(results[1].message.find("SIGSEGV"), std::string::npos)
      << results[1].message;
  EXPECT_EQ(results[2].name, "g.after");
  EXPECT_EQ(results[2].status, CheckStatus::kPass);
}

TEST(RunnerTest, ExitInsideACheckIsAFailure) {
  auto results = RunAll({Group("g", [](CheckContext& ctx) {
    ctx.Run("g.exit", []() -> Outcome { _exit(3); });
    ctx.Run("g.after", [] { return Pass(); });
  })});
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, CheckStatus::kFail);
  EXPECT_NE(results[0].message.find("code 3"), std::string::npos)
      << results[0].message;
  EXPECT_EQ(results[1].status, CheckStatus::kPass);
}

TEST(RunnerTest, HungCheckIsKilled) {
  RunnerOptions options;
  options.check_timeout_s = 0.5;
  auto start = std::chrono::steady_clock::now();
  auto results =
      RunAll({Group("g",
                    [](CheckContext& ctx) {
                      ctx.Run("g.hang", []() -> Outcome {
                        std::this_thread::sleep_for(std::chrono::seconds(30));
                        return Pass();
                      });
                      ctx.Run("g.after", [] { return Pass(); });
                    })},
             options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, CheckStatus::kFail);
  EXPECT_NE(results[0].message.find("did not finish"), std::string::npos);
  EXPECT_EQ(results[1].status, CheckStatus::kPass);
}

TEST(RunnerTest, SetupAndTeardownFailures) {
  GroupSpec bad_setup = Group("s", [](CheckContext& ctx) {
    ctx.Run("s.never", [] { return Pass(); });
  });
  bad_setup.setup = [] { return Fail("init failed"); };
  GroupSpec bad_teardown = Group(
      "t", [](CheckContext& ctx) { ctx.Run("t.ok", [] { return Pass(); }); });
  bad_teardown.teardown = [] { raise(SIGABRT); };
  auto results = RunAll({bad_setup, bad_teardown});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].name, "s.setup");
  EXPECT_EQ(results[0].message, "init failed");
  EXPECT_EQ(results[1].name, "t.ok");
  EXPECT_EQ(results[2].name, "t.teardown");
  EXPECT_NE(results[2].message.find("SIGABRT"), std::string::npos)
      << results[2].message;
}

TEST(RunnerTest, ExceptionsFailTheCheck) {
  RunnerOptions options;
  options.isolate = false;  // also covers the in-process mode
  auto results = RunAll({Group("g",
                               [](CheckContext& ctx) {
                                 ctx.Run("g.throws", []() -> Outcome {
                                   throw std::runtime_error("boom");
                                 });
                                 ctx.Run("g.ok", [] { return Pass(); });
                               })},
                        options);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, CheckStatus::kFail);
  EXPECT_NE(results[0].message.find("boom"), std::string::npos);
  EXPECT_EQ(results[1].status, CheckStatus::kPass);
}

TEST(RunnerTest, DescribesSignals) {
  EXPECT_NE(DescribeSignal(SIGSEGV).find("SIGSEGV"), std::string::npos);
  EXPECT_NE(DescribeSignal(SIGBUS).find("signal 7"), std::string::npos);
}

}  // namespace
}  // namespace tessera::conformance

namespace tessera::conformance {
namespace {

TEST(RunIsolatedTest, ReturnsTheValueOrTheCrash) {
  auto v = RunIsolated([] { return 42; }, 10);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(*v, 42);
  auto crash = RunIsolated(
      []() -> int {
        raise(SIGSEGV);
        return 0;
      },
      10);
  ASSERT_FALSE(crash.ok());
  EXPECT_NE(crash.status().message().find("SIGSEGV"), std::string::npos);
  auto hang = RunIsolated(
      []() -> int {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return 0;
      },
      0.3);
  ASSERT_FALSE(hang.ok());
  EXPECT_NE(hang.status().message().find("did not return"), std::string::npos);
}

}  // namespace
}  // namespace tessera::conformance
