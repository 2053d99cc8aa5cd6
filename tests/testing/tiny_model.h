// ScratchTinyModel: a `tessera make-model --arch qwen3 --preset tiny`
// checkpoint (its chat template renders tools) in a fresh temporary folder,
// for end-to-end tests that need a real model but not a particular one.
// The folder is removed by the destructor. Thread-compatible.
#ifndef TESSERA_TESTS_TESTING_TINY_MODEL_H_
#define TESSERA_TESTS_TESTING_TINY_MODEL_H_

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "testing/subprocess.h"

namespace tessera::testing {

class ScratchTinyModel {
 public:
  // `binary`: the tessera executable; `seed`: make-model's weight seed.
  explicit ScratchTinyModel(const std::string& binary, int seed = 1) {
    static std::atomic<int> counter{0};
    dir_ = (std::filesystem::temp_directory_path() /
            ("tessera_tiny_model_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter++)))
               .string();
    const CommandResult made = RunShell(
        ShellQuote(binary) + " make-model --arch qwen3 --preset tiny --seed " +
        std::to_string(seed) + " --out " + ShellQuote(dir_));
    ok_ = made.exit_code == 0;
    error_ = made.err;
  }
  ~ScratchTinyModel() { std::filesystem::remove_all(dir_); }
  ScratchTinyModel(const ScratchTinyModel&) = delete;
  ScratchTinyModel& operator=(const ScratchTinyModel&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }  // make-model's stderr
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  bool ok_ = false;
  std::string error_;
};

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_TINY_MODEL_H_
