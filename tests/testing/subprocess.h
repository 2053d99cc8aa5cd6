// Running the built `tessera` binary (or any shell command) from end-to-end
// tests, capturing its exit code, stdout and stderr.
//
// Thread-compatible: each call uses its own temporary file for stderr.
#ifndef TESSERA_TESTS_TESTING_SUBPROCESS_H_
#define TESSERA_TESTS_TESTING_SUBPROCESS_H_

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tessera::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when the command could not run or was signalled
  std::string out;     // stdout
  std::string err;     // stderr (empty when the command redirects it)
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Quotes `s` for /bin/sh.
inline std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs `command` with /bin/sh. Unless `command` redirects stderr itself
// (pass capture_stderr = false then), stderr is captured into `err`.
inline CommandResult RunShell(const std::string& command,
                              bool capture_stderr = true) {
  static std::atomic<int> counter{0};
  const std::string err_path =
      (std::filesystem::temp_directory_path() /
       ("tessera_test_stderr_" + std::to_string(::getpid()) + "_" +
        std::to_string(counter++)))
          .string();
  const std::string full =
      capture_stderr ? command + " 2>" + ShellQuote(err_path) : command;
  CommandResult result;
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> chunk;
  size_t n;
  while ((n = fread(chunk.data(), 1, chunk.size(), pipe)) > 0) {
    result.out.append(chunk.data(), n);
  }
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (capture_stderr) {
    result.err = ReadFile(err_path);
    std::filesystem::remove(err_path);
  }
  return result;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_SUBPROCESS_H_
