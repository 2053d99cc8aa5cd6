// Runtime: discovery, selection, options and visible devices, with the real
// cpu plugin (<build>/lib) and the minimal example plugin (<build>/examples).
#include "runtime/runtime.h"

#include <gtest/gtest.h>

#include <fstream>

#include "runtime/test_util.h"

namespace tessera::runtime {
namespace {

using testing::ScopedCleanEnv;

class RuntimeTest : public ::testing::Test {
 protected:
  StatusOr<std::unique_ptr<Runtime>> Create(RuntimeFlags flags = {}) {
    auto config = RuntimeConfig::FromEnvironment(flags);
    if (!config.ok()) return config.status();
    candidates_.clear();
    return Runtime::Create(*config, &candidates_);
  }
  const PluginCandidate* Find(const std::string& name) const {
    for (const auto& c : candidates_) {
      if (c.name == name) return &c;
    }
    return nullptr;
  }

  ScopedCleanEnv env_;
  std::vector<PluginCandidate> candidates_;
};

TEST_F(RuntimeTest, ChoosesTheCpuPluginByScore) {
  auto runtime = Create();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  EXPECT_EQ((*runtime)->plugin().name(), "cpu");
  EXPECT_TRUE((*runtime)->cpu_is_selected());
  EXPECT_GE((*runtime)->num_devices(), 1);
  EXPECT_TRUE((*runtime)->CheckUsable().ok());
  const PluginCandidate* cpu = Find("cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->status, CandidateStatus::kSelected);
  EXPECT_EQ(cpu->probe_score, 10);
  EXPECT_EQ(cpu->abi_version, "1.8");  // built against the 1.8 header
  EXPECT_TRUE(cpu->fallback);
  EXPECT_EQ(cpu->reason, "highest probe score (10)");
  // The minimal plugin lives in <build>/examples: not discovered by default.
  EXPECT_EQ(Find("minimal"), nullptr);
}

TEST_F(RuntimeTest, PluginPathAddsCandidatesButScoreStillDecides) {
  env_.Set("TESSERA_PLUGIN_PATH", testing::MinimalPluginDir());
  auto runtime = Create();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  EXPECT_EQ((*runtime)->plugin().name(), "cpu");
  const PluginCandidate* minimal = Find("minimal");
  ASSERT_NE(minimal, nullptr);
  EXPECT_EQ(minimal->status, CandidateStatus::kAvailable);
  EXPECT_EQ(minimal->probe_score, 1);
  EXPECT_NE(minimal->reason.find("below cpu's 10"), std::string::npos)
      << minimal->reason;
}

TEST_F(RuntimeTest, PlatformNameSelects) {
  env_.Set("TESSERA_PLUGIN_PATH", testing::MinimalPluginDir());
  env_.Set("TESSERA_PLATFORM", "minimal");
  auto runtime = Create();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  EXPECT_EQ((*runtime)->plugin().name(), "minimal");
  EXPECT_EQ((*runtime)->cpu_plugin().name(), "cpu");
  EXPECT_FALSE((*runtime)->cpu_is_selected());
  EXPECT_EQ(Find("minimal")->status, CandidateStatus::kSelected);
  EXPECT_EQ(Find("minimal")->reason, "requested with TESSERA_PLATFORM=minimal");
  EXPECT_EQ(Find("cpu")->status, CandidateStatus::kAvailable);
  EXPECT_TRUE(Find("cpu")->fallback);
  EXPECT_EQ(Find("cpu")->reason, "loaded for op fallback");
}

TEST_F(RuntimeTest, UnknownPlatformIsAnError) {
  RuntimeFlags flags;
  flags.platform = "nosuch";
  auto runtime = Create(flags);
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), StatusCode::kNotFound);
  const std::string m = runtime.status().message();
  EXPECT_NE(m.find("no plugin named 'nosuch'"), std::string::npos) << m;
  EXPECT_NE(m.find("cpu"), std::string::npos) << m;
  EXPECT_NE(m.find("TESSERA_PLUGIN_PATH"), std::string::npos) << m;
  // The records are there for doctor even though Create failed.
  EXPECT_NE(Find("cpu"), nullptr);
}

TEST_F(RuntimeTest, RequestedPluginThatIsRejectedIsNeverReplaced) {
  std::string junk = ::testing::TempDir() + "/libtessera_plugin_junk.so";
  std::ofstream(junk) << "not an ELF file";
  RuntimeFlags flags;
  flags.device_plugin = junk;
  auto runtime = Create(flags);
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), StatusCode::kFailedPrecondition);
  const std::string m = runtime.status().message();
  EXPECT_NE(m.find("--device-plugin"), std::string::npos) << m;
  EXPECT_NE(m.find(junk), std::string::npos) << m;
  const PluginCandidate* rec = Find("junk");
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->status, CandidateStatus::kRejected);
  EXPECT_EQ(rec->probe_score, -1);
  EXPECT_NE(Find("cpu")->status, CandidateStatus::kSelected);
}

TEST_F(RuntimeTest, MissingPluginFileSaysNotFound) {
  env_.Set("TESSERA_DEVICE_PLUGIN", "/nonexistent/libtessera_plugin_x.so");
  auto runtime = Create();
  ASSERT_FALSE(runtime.ok());
  EXPECT_NE(runtime.status().message().find("not found"), std::string::npos)
      << runtime.status().message();
  EXPECT_NE(runtime.status().message().find("TESSERA_DEVICE_PLUGIN"),
            std::string::npos);
}

TEST_F(RuntimeTest, CpuDevicesAndVisibleDevices) {
  env_.Set("TESSERA_CPU_DEVICES", "3");
  {
    auto runtime = Create();
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    EXPECT_EQ((*runtime)->num_devices(), 3);
  }
  env_.Set("TESSERA_VISIBLE_DEVICES", "0,2");
  auto runtime = Create();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  ASSERT_EQ((*runtime)->num_devices(), 2);
  EXPECT_EQ((*runtime)->device(0).properties().physical_index, 0);
  EXPECT_EQ((*runtime)->device(1).properties().physical_index, 2);
  EXPECT_EQ((*runtime)->device(1).Label(), "cpu:1");
}

TEST_F(RuntimeTest, EmptyVisibleDevicesLeavesNoUsableDevice) {
  env_.Set("TESSERA_VISIBLE_DEVICES", "");
  auto runtime = Create();
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  EXPECT_EQ((*runtime)->num_devices(), 0);
  Status s = (*runtime)->CheckUsable();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("TESSERA_VISIBLE_DEVICES"), std::string::npos)
      << s.message();
}

TEST_F(RuntimeTest, VisibleDevicesApplyToTheSelectedPluginOnly) {
  env_.Set("TESSERA_PLUGIN_OPTIONS", "devices=3");
  env_.Set("TESSERA_VISIBLE_DEVICES", "2");
  RuntimeFlags flags;
  flags.device_plugin = testing::MinimalPluginPath();
  auto runtime = Create(flags);
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  ASSERT_EQ((*runtime)->num_devices(), 1);
  EXPECT_EQ((*runtime)->device(0).properties().physical_index, 2);
  // The cpu fallback keeps its device 0.
  auto cpu_count = (*runtime)->cpu_plugin().DeviceCount();
  ASSERT_TRUE(cpu_count.ok());
  EXPECT_GE(*cpu_count, 1);
}

TEST_F(RuntimeTest, ConflictingOptionsNameBothSources) {
  env_.Set("TESSERA_PLUGIN_OPTIONS", "devices=2");
  env_.Set("TESSERA_CPU_DEVICES", "3");
  auto runtime = Create();
  ASSERT_FALSE(runtime.ok());
  const std::string m = runtime.status().message();
  EXPECT_NE(m.find("TESSERA_PLUGIN_OPTIONS"), std::string::npos) << m;
  EXPECT_NE(m.find("TESSERA_CPU_DEVICES"), std::string::npos) << m;
}

TEST_F(RuntimeTest, RequestedPluginInitFailureIsAnError) {
  env_.Set("TESSERA_PLUGIN_OPTIONS", "warp=9");
  RuntimeFlags flags;
  flags.device_plugin = testing::MinimalPluginPath();
  auto runtime = Create(flags);
  ASSERT_FALSE(runtime.ok());
  const std::string m = runtime.status().message();
  EXPECT_NE(m.find("failed to initialise"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown option 'warp'"), std::string::npos) << m;
  EXPECT_EQ(Find("minimal")->status, CandidateStatus::kRejected);
}

TEST_F(RuntimeTest, CpuThreadsOptionReachesTheCpuPlugin) {
  RuntimeFlags flags;
  flags.cpu_plugin_options.push_back({"threads", "0", "--cpu-threads"});
  auto runtime = Create(flags);
  ASSERT_FALSE(runtime.ok());  // 0 threads is invalid for the cpu plugin
  EXPECT_NE(runtime.status().message().find("--cpu-threads"), std::string::npos)
      << runtime.status().message();
  flags.cpu_plugin_options[0].value = "2";
  auto ok = Create(flags);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST_F(RuntimeTest, DeviceAllocationsAreAccounted) {
  auto runtime = Create();
  ASSERT_TRUE(runtime.ok());
  Device& device = (*runtime)->device(0);
  {
    auto a = device.Allocate(1000);
    auto b = device.AllocateUncached(4096);
    ASSERT_TRUE(a.ok() && b.ok());
    MemoryStats m = device.memory_stats();
    EXPECT_EQ(m.requested_bytes, 5096u);
    EXPECT_GE(m.reserved_bytes, 1024u + 4096u);
  }
  MemoryStats m = device.memory_stats();
  EXPECT_EQ(m.requested_bytes, 0u);
  EXPECT_EQ(m.requested_peak, 5096u);
  EXPECT_GE(m.reserved_bytes, 1024u);  // the pooled block stays cached
  ASSERT_TRUE(device.Trim().ok());
  EXPECT_EQ(device.memory_stats().reserved_bytes, 0u);
  if (device.plugin().SupportsPinnedHost()) {
    auto pinned = device.Allocate(100, TSR_MEM_PINNED_HOST);
    ASSERT_TRUE(pinned.ok()) << pinned.status().ToString();
    EXPECT_NE((*pinned)->host_pointer(), nullptr);
    EXPECT_EQ(device.memory_stats(TSR_MEM_PINNED_HOST).requested_bytes, 100u);
  }
}

}  // namespace
}  // namespace tessera::runtime
