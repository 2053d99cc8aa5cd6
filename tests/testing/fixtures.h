// Access to the shared fixtures (../shared) from tests.
//
// TESSERA_SHARED_DIR comes from the CMake cache variable of the same name.
// When the folder (or a file in it) is missing, a test skips with the reason;
// under CI (CI=true) it fails instead, so CI never passes on missing data.
#ifndef TESSERA_TESTS_TESTING_FIXTURES_H_
#define TESSERA_TESTS_TESTING_FIXTURES_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tessera::testing {

inline std::string SharedDir() { return TESSERA_SHARED_DIR; }

inline bool RunningUnderCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace tessera::testing

// Resolves `relative` under the shared folder into `var`, or skips (fails
// under CI) the current test when it is absent.
#define TSR_REQUIRE_SHARED_FIXTURE(var, relative)                            \
  std::string var = ::tessera::testing::SharedDir() + "/" + (relative);     \
  if (!std::filesystem::exists(var)) {                                       \
    if (::tessera::testing::RunningUnderCi()) {                              \
      FAIL() << "fixture " << var << " is missing and CI=true; set "        \
             << "-DTESSERA_SHARED_DIR to the shared fixtures folder";       \
    }                                                                        \
    GTEST_SKIP() << "fixture " << var << " not found; configure with "      \
                 << "-DTESSERA_SHARED_DIR=/path/to/shared to run this test"; \
  }

#endif  // TESSERA_TESTS_TESTING_FIXTURES_H_
