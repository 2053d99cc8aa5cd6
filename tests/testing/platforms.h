// The device platforms the end-to-end correctness tests run on, so one test
// body checks every plugin (value-parameterised: TEST_P + the platform
// name as the parameter) instead of a copy per plugin.
//
// "cpu" is always built and usable. "opencl" needs its plugin built
// (TSR_HAVE_OPENCL_PLUGIN, set by tests/e2e/CMakeLists.txt) and an OpenCL
// device, which `tessera doctor --platform opencl` confirms once per test
// process. A platform that cannot run skips its tests with the reason;
// under CI (CI=true; scripts/setup.sh installs PoCL) it fails instead.
#ifndef TESSERA_TESTS_TESTING_PLATFORMS_H_
#define TESSERA_TESTS_TESTING_PLATFORMS_H_

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "testing/fixtures.h"
#include "testing/subprocess.h"

namespace tessera::testing {

inline std::vector<std::string> TestPlatforms() { return {"cpu", "opencl"}; }

// Empty when `platform` can run here, else why not.
inline std::string PlatformUnavailableReason(const std::string& tessera_bin,
                                             const std::string& platform) {
  if (platform == "cpu") return "";
#ifndef TSR_HAVE_OPENCL_PLUGIN
  if (platform == "opencl") {
    return "the opencl plugin was not built (no OpenCL headers/ICD loader at configure "
           "time; scripts/setup.sh installs them)";
  }
#endif
  static std::mutex mu;
  static std::map<std::string, std::string> reasons;
  std::lock_guard<std::mutex> lock(mu);
  auto it = reasons.find(platform);
  if (it != reasons.end()) return it->second;
  CommandResult r =
      RunShell(tessera_bin + " doctor --platform " + ShellQuote(platform) + " 2>&1");
  std::string reason;
  if (r.exit_code != 0) {
    reason = "`tessera doctor --platform " + platform + "` exited " +
             std::to_string(r.exit_code) + ":\n" + r.out;
  }
  reasons[platform] = reason;
  return reason;
}

// The platform test-name suffix for INSTANTIATE_TEST_SUITE_P.
inline std::string PlatformParamName(const ::testing::TestParamInfo<std::string>& info) {
  return info.param;
}

}  // namespace tessera::testing

// Skips (fails under CI) the current test when `platform` cannot run.
#define TSR_REQUIRE_PLATFORM(tessera_bin, platform)                                  \
  do {                                                                               \
    const std::string tsr_reason_ =                                                  \
        ::tessera::testing::PlatformUnavailableReason((tessera_bin), (platform));    \
    if (!tsr_reason_.empty()) {                                                      \
      if (::tessera::testing::RunningUnderCi()) {                                    \
        FAIL() << "platform " << (platform) << " is unusable and CI=true: " << tsr_reason_; \
      }                                                                              \
      GTEST_SKIP() << "platform " << (platform) << " unusable: " << tsr_reason_;     \
    }                                                                                \
  } while (0)

#endif  // TESSERA_TESTS_TESTING_PLATFORMS_H_
