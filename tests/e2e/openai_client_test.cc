// `tessera serve` driven by the OFFICIAL OpenAI JavaScript client: starts the
// built server on the demo model with an API key and runs
// tests/e2e/openai_client/openai_client_test.mjs under Node, which uses the
// npm package `openai` pinned in the repository's package.json (install it
// with `npm ci` at the repository root). The script's checks (models,
// completions, chat, streaming, n/seed, logprobs, tools, error classes) are
// listed in its header; this test asserts that all of them pass and that
// the server exits cleanly afterwards.
//
// Without `node` (>= 20) or node_modules/openai the test skips with the
// reason; under CI (CI=true) it fails instead.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <iostream>
#include <string>

#include "testing/fixtures.h"
#include "testing/node_tools.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"
#include "testing/scripted_chat_model.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using testing::RunShell;
using testing::ServerProcess;
using testing::ShellQuote;

constexpr const char* kBin = TSR_TESSERA_BIN;
constexpr const char* kRepoDir = TSR_REPO_DIR;
constexpr const char* kApiKey = "test-key";

TEST(OpenAiClientTest, OfficialNodeClientPassesAllChecks) {
  const std::string missing = testing::MissingNodePackage(kRepoDir, "openai");
  if (!missing.empty()) {
    if (testing::RunningUnderCi()) FAIL() << missing << " (CI=true)";
    GTEST_SKIP() << missing;
  }

  ServerProcess server;
  ASSERT_TRUE(server.Start(kBin, {"--api-key", kApiKey})) << server.log();
  // A second server on a model whose greedy answer is a tool call.
  const std::string tool_dir =
      (fs::temp_directory_path() /
       ("tessera_openai_tool_model_" + std::to_string(::getpid())))
          .string();
  fs::create_directories(tool_dir);
  Status made = testing::MakeScriptedChatModel(tool_dir, testing::ToolCallScript());
  ASSERT_TRUE(made.ok()) << made.ToString();
  ServerProcess tool_server;
  ASSERT_TRUE(tool_server.Start(kBin, {"--model-path", tool_dir,
                                       "--tool-call-parser", "qwen"}))
      << tool_server.log();

  const std::string script = (fs::path(kRepoDir) / "tests" / "e2e" /
                              "openai_client" / "openai_client_test.mjs")
                                 .string();
  ASSERT_TRUE(fs::exists(script)) << script;
  // stderr joins stdout so a crash of the script shows next to its checks;
  // `timeout` bounds a hung stream (the script's own client timeout is 120 s
  // per request).
  const std::string command =
      "TESSERA_BASE_URL=" + ShellQuote(server.base_url()) +
      " TESSERA_API_KEY=" + ShellQuote(kApiKey) +
      " TESSERA_TOOL_BASE_URL=" + ShellQuote(tool_server.base_url()) +
      " timeout 600 node " +
      ShellQuote(script) + " 2>&1";
  const auto result = RunShell(command, /*capture_stderr=*/false);
  std::cout << result.out;

  EXPECT_EQ(result.exit_code, 0)
      << "openai client checks failed (exit " << result.exit_code
      << "; the exit code counts the failed checks):\n"
      << result.out << "\n--- server log ---\n"
      << server.log();
  EXPECT_NE(result.out.find("all checks passed"), std::string::npos)
      << result.out;
  EXPECT_EQ(server.Stop(), 0) << server.log();
  EXPECT_EQ(tool_server.Stop(), 0) << tool_server.log();
  fs::remove_all(tool_dir);
}

}  // namespace
}  // namespace tessera
