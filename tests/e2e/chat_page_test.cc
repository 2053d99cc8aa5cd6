// The built-in chat page (GET /) in a real browser: starts `tessera serve`
// on the demo model and runs tests/e2e/chat_page/chat_page_test.mjs, which
// drives Debian's headless Chromium through puppeteer-core (pinned in the
// repository's package.json): the model list, a streamed answer read from
// the page (equal to the API's greedy answer), the Stop button. The
// screenshot is kept as a test artifact: build/test-artifacts/chat_page.png.
//
// Without node, node_modules/puppeteer-core or chromium the test skips with
// the reason; under CI (CI=true) it fails instead.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <string>

#include "testing/fixtures.h"
#include "testing/node_tools.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::RunShell;
using testing::ServerProcess;
using testing::ShellQuote;

constexpr const char* kBin = TSR_TESSERA_BIN;
constexpr const char* kRepoDir = TSR_REPO_DIR;
constexpr const char* kArtifactDir = TSR_ARTIFACT_DIR;

// The Chromium binary, or "" with the reason in `why`.
std::string FindChromium(std::string* why) {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (fs::exists(path)) return path;
  }
  *why = "chromium is not installed (scripts/setup.sh installs Debian's)";
  return "";
}

TEST(ChatPageTest, HeadlessChromiumChatsStreamsAndStops) {
  std::string why;
  const std::string chromium = FindChromium(&why);
  if (why.empty()) why = testing::MissingNodePackage(kRepoDir, "puppeteer-core");
  if (!why.empty()) {
    if (testing::RunningUnderCi()) FAIL() << why << " (CI=true)";
    GTEST_SKIP() << why;
  }
  ServerProcess server;
  ASSERT_TRUE(server.Start(kBin, {"--log-interval", "0"})) << server.log();
  fs::create_directories(kArtifactDir);
  const std::string screenshot =
      (fs::path(kArtifactDir) / "chat_page.png").string();
  fs::remove(screenshot);
  const std::string script =
      (fs::path(kRepoDir) / "tests" / "e2e" / "chat_page" / "chat_page_test.mjs")
          .string();
  const auto result = RunShell(
      "TESSERA_BASE_URL=" + ShellQuote(server.base_url()) +
          " CHROMIUM=" + ShellQuote(chromium) +
          " SCREENSHOT=" + ShellQuote(screenshot) + " timeout 300 node " +
          ShellQuote(script) + " 2>&1",
      /*capture_stderr=*/false);
  std::cout << result.out;
  EXPECT_EQ(result.exit_code, 0) << result.out << "\n--- server log ---\n"
                                 << server.log();
  EXPECT_TRUE(fs::exists(screenshot)) << "no screenshot at " << screenshot;
  EXPECT_EQ(server.Stop(), 0) << server.log();
}

}  // namespace
}  // namespace tessera
