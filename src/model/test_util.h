// Helpers for src/model tests: a scratch directory removed at scope exit,
// file reading/writing, and raw safetensors files (possibly broken on
// purpose). Test-only; not part of tessera_model.
#ifndef TESSERA_MODEL_TEST_UTIL_H_
#define TESSERA_MODEL_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace tessera::model::testing {

// A fresh directory under the system temp folder, deleted on destruction.
class ScratchDir {
 public:
  ScratchDir() {
    static std::atomic<int> counter{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info != nullptr ? std::string(info->test_suite_name()) +
                                             "." + info->name()
                                       : "model_test";
    path_ = std::filesystem::temp_directory_path() /
            ("tessera_model_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter++) + "_" + name);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string File(std::string_view name) const {
    return (path_ / name).string();
  }

 private:
  std::filesystem::path path_;
};

inline void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// 8-byte little-endian length + header + data, exactly as given.
inline std::string RawSafetensors(std::string_view header,
                                  std::string_view data) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.push_back(char((n >> (8 * i)) & 0xFF));
  out.append(header);
  out.append(data);
  return out;
}

}  // namespace tessera::model::testing

#endif  // TESSERA_MODEL_TEST_UTIL_H_
