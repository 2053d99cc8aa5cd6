// Helpers for the model runner tests: a runtime as the engine would pick it
// (honouring TESSERA_* variables), a scoped environment variable, make-model
// checkpoints in scratch directories, and logits comparisons. Test-only.
#ifndef TESSERA_MODEL_RUNNER_TEST_UTIL_H_
#define TESSERA_MODEL_RUNNER_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/test_util.h"
#include "runtime/runtime.h"

namespace tessera::model::testing {

// Sets (or unsets, with nullopt) a variable for one scope.
class ScopedEnvVar {
 public:
  ScopedEnvVar(const char* name, std::optional<std::string> value)
      : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnvVar() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline StatusOr<std::unique_ptr<runtime::Runtime>> CreateRuntime() {
  auto config = runtime::RuntimeConfig::FromEnvironment();
  if (!config.ok()) return config.status();
  return runtime::Runtime::Create(*config);
}

// make-model `preset` for `arch` in `dtype` into `dir`.
inline StatusOr<std::unique_ptr<Checkpoint>> MakeCheckpoint(
    const std::string& dir, Architecture arch, DType dtype,
    const std::string& preset = "tiny", uint64_t seed = 7) {
  MakeModelOptions options;
  options.preset = preset;
  options.arch = arch;
  options.out_dir = dir;
  options.seed = seed;
  options.dtype = dtype;
  options.force = true;
  auto made = MakeModel(options);
  if (!made.ok()) return made.status();
  return Checkpoint::Open(dir);
}

// max |a - b| / max(1e-6, max |b|): the error relative to the logit scale.
inline double RelativeError(std::span<const float> a,
                            const std::vector<double>& b) {
  double max_diff = 0.0, scale = 1e-6;
  for (size_t i = 0; i < b.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return max_diff / scale;
}

inline int32_t ArgmaxRow(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) -
                              row.begin());
}

}  // namespace tessera::model::testing

#endif  // TESSERA_MODEL_RUNNER_TEST_UTIL_H_
