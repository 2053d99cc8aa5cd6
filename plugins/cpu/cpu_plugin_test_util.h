// The cpu plugin's unit-test fixture: the shared plugin fixture
// (tests/testing/plugin_test_util.h) on the built cpu plugin.
#ifndef TESSERA_PLUGINS_CPU_CPU_PLUGIN_TEST_UTIL_H_
#define TESSERA_PLUGINS_CPU_CPU_PLUGIN_TEST_UTIL_H_

#include "testing/plugin_test_util.h"

namespace tessera::cpu::testing {

using ::tessera::testing::ContiguousStrides;
using ::tessera::testing::DeviceTensor;
using ::tessera::testing::ExpectNear;
using ::tessera::testing::NumElements;
using ::tessera::testing::RoundTo;
using ::tessera::testing::StridedOffset;

class CpuPluginTest : public ::tessera::testing::PluginTest {
 protected:
  std::string PluginPath() const override { return TESSERA_CPU_PLUGIN_PATH; }
};

}  // namespace tessera::cpu::testing

#endif  // TESSERA_PLUGINS_CPU_CPU_PLUGIN_TEST_UTIL_H_
