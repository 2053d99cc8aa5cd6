#include "base/file_checks.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tessera {
namespace {

namespace fs = std::filesystem;

TEST(CheckRegularFileTest, RegularFilesWithinTheLimitPass) {
  const fs::path dir = fs::temp_directory_path() /
                       ("tessera_file_checks_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path file = dir / "config.json";
  std::ofstream(file) << "{\"a\": 1}";
  EXPECT_TRUE(CheckRegularFile(file.string(), 100, "config").ok());
  // Absent files and directories are left to the caller's own message.
  EXPECT_TRUE(CheckRegularFile((dir / "missing").string(), 100, "x").ok());
  EXPECT_TRUE(CheckRegularFile(dir.string(), 100, "x").ok());
  const Status big = CheckRegularFile(file.string(), 4, "config");
  EXPECT_EQ(big.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(big.message().find("8 bytes"), std::string::npos) << big.message();

  const fs::path fifo = dir / "weights.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const Status f = CheckRegularFile(fifo.string(), 100, "weights");
  EXPECT_NE(f.message().find("is a FIFO"), std::string::npos) << f.message();
  fs::remove_all(dir);
}

TEST(CheckRegularFileTest, DevicesAreRefused) {
  const Status zero =
      CheckRegularFile("/dev/zero", kMaxTextFileBytes, "chat template");
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(zero.message().find("chat template /dev/zero is a character "
                                "device"),
            std::string::npos)
      << zero.message();
}

}  // namespace
}  // namespace tessera
