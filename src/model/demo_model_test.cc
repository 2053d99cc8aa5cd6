#include "model/demo_model.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "model/checkpoint.h"
#include "model/test_util.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;
using ::tessera::model::testing::ReadFile;
using ::tessera::model::testing::ScratchDir;
using ::tessera::model::testing::WriteFile;

TEST(DemoModelTest, WritesALoadableCheckpointWithItsStamp) {
  ScratchDir scratch;
  const std::string dir = scratch.File("demo-model");
  auto made = EnsureDemoModel(dir);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_EQ(*made, fs::weakly_canonical(dir).string());
  EXPECT_EQ(ReadFile(dir + "/tessera_demo_stamp"),
            std::string(kDemoModelStamp) + "\n");
  auto checkpoint = Checkpoint::Open(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
}

TEST(DemoModelTest, KeepsAMatchingDirectoryAndRewritesAStaleOne) {
  ScratchDir scratch;
  const std::string dir = scratch.File("demo-model");
  ASSERT_TRUE(EnsureDemoModel(dir).ok());
  const fs::path weights = fs::path(dir) / "model.safetensors";
  const auto first_write = fs::last_write_time(weights);

  ASSERT_TRUE(EnsureDemoModel(dir).ok());
  EXPECT_EQ(fs::last_write_time(weights), first_write) << "rewritten";

  // An older build's stamp (or a torn write's missing one) is rewritten.
  WriteFile(dir + "/tessera_demo_stamp", "tessera-demo 1\n");
  WriteFile(weights.string(), "torn");
  ASSERT_TRUE(EnsureDemoModel(dir).ok());
  EXPECT_EQ(ReadFile(dir + "/tessera_demo_stamp"),
            std::string(kDemoModelStamp) + "\n");
  EXPECT_TRUE(Checkpoint::Open(dir).ok());
}

// ctest -j starts several servers on the same build/demo-model at once:
// every process must get a loadable checkpoint (each used to write
// model.safetensors.partial and race to rename it).
TEST(DemoModelTest, ConcurrentProcessesAllGetTheModel) {
  ScratchDir scratch;
  const std::string dir = scratch.File("demo-model");
  constexpr int kProcesses = 6;
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto made = EnsureDemoModel(dir);
      bool ok = made.ok() && Checkpoint::Open(*made).ok();
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "a process failed to get the demo model";
  }
  EXPECT_FALSE(fs::exists(dir + "/model.safetensors.partial"));
}

TEST(DemoModelTest, UnwritableDirectoryIsAClearError) {
  auto made = EnsureDemoModel("/proc/tessera-no-such/demo-model");
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("--model-path"), std::string::npos)
      << made.status().ToString();
}

}  // namespace
}  // namespace tessera::model
