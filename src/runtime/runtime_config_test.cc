#include "runtime/runtime_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "runtime/test_util.h"

namespace tessera::runtime {
namespace {

using testing::ScopedCleanEnv;

TEST(VisibleDevicesTest, Parses) {
  auto v = ParseVisibleDevices("0,2");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<int32_t>{0, 2}));
  v = ParseVisibleDevices(" 3 , 1 ");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, (std::vector<int32_t>{3, 1}));
  v = ParseVisibleDevices("");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->empty());
}

TEST(VisibleDevicesTest, RejectsWithAReason) {
  for (const char* bad : {"a", "-1", "1.5", "0,0", "99999999999", "+1"}) {
    auto v = ParseVisibleDevices(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(v.status().message().find("TESSERA_VISIBLE_DEVICES"),
              std::string::npos);
  }
}

TEST(PluginOptionsTest, Parses) {
  auto o =
      ParsePluginOptions("threads=4, devices = 2", "TESSERA_PLUGIN_OPTIONS");
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->size(), 2u);
  EXPECT_EQ((*o)[0].key, "threads");
  EXPECT_EQ((*o)[0].value, "4");
  EXPECT_EQ((*o)[1].key, "devices");
  EXPECT_EQ((*o)[1].value, "2");
  EXPECT_EQ((*o)[1].source, "TESSERA_PLUGIN_OPTIONS");
  EXPECT_FALSE(ParsePluginOptions("threads", "X").ok());
  EXPECT_FALSE(ParsePluginOptions("=4", "X").ok());
  EXPECT_FALSE(ParsePluginOptions("a=1,a=2", "X").ok());
}

TEST(RuntimeConfigTest, DefaultsComeFromTheExecutable) {
  ScopedCleanEnv env;
  auto c = RuntimeConfig::FromEnvironment();
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->device_plugin_path.empty());
  EXPECT_TRUE(c->platform.empty());
  EXPECT_TRUE(c->selection_source.empty());
  EXPECT_FALSE(c->visible_devices.has_value());
  EXPECT_FALSE(c->cpu_devices.has_value());
  // The test binary lives in <build>/tests, so the lib dir is <build>/lib.
  EXPECT_EQ(std::filesystem::weakly_canonical(c->lib_dir),
            std::filesystem::weakly_canonical(testing::BuildLibDir()));
  // The installed folder first (absent in a build tree), then the lib dir.
  ASSERT_EQ(c->plugin_dirs.size(), 2u);
  EXPECT_EQ(c->plugin_dirs[0], c->lib_dir + "/tessera/plugins");
  EXPECT_EQ(c->plugin_dirs[1], c->lib_dir);
  EXPECT_EQ(c->cpu_plugin_path, c->lib_dir + "/libtessera_plugin_cpu.so");
}

TEST(RuntimeConfigTest, FlagsBeatVariables) {
  ScopedCleanEnv env;
  env.Set("TESSERA_DEVICE_PLUGIN", "/env/libx.so");
  env.Set("TESSERA_PLATFORM", "envplat");
  auto c = RuntimeConfig::FromEnvironment();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->device_plugin_path, "/env/libx.so");
  EXPECT_EQ(c->selection_source, "TESSERA_DEVICE_PLUGIN");

  RuntimeFlags flags;
  flags.platform = "flagplat";
  c = RuntimeConfig::FromEnvironment(flags);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->device_plugin_path.empty());
  EXPECT_EQ(c->platform, "flagplat");
  EXPECT_EQ(c->selection_source, "--platform");

  flags = {};
  flags.device_plugin = "/flag/liby.so";
  c = RuntimeConfig::FromEnvironment(flags);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->device_plugin_path, "/flag/liby.so");
  EXPECT_EQ(c->selection_source, "--device-plugin");

  flags.platform = "both";
  EXPECT_FALSE(RuntimeConfig::FromEnvironment(flags).ok());

  unsetenv("TESSERA_DEVICE_PLUGIN");
  c = RuntimeConfig::FromEnvironment();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->platform, "envplat");
  EXPECT_EQ(c->selection_source, "TESSERA_PLATFORM");
}

TEST(RuntimeConfigTest, ReadsEveryVariable) {
  ScopedCleanEnv env;
  env.Set("TESSERA_PLUGIN_PATH", "/a:/b::");
  env.Set("TESSERA_VISIBLE_DEVICES", "1,0");
  env.Set("TESSERA_CPU_DEVICES", "3");
  env.Set("TESSERA_PLUGIN_OPTIONS", "threads=2");
  env.Set("TESSERA_DISABLE_OPS", "rms_norm,add");
  env.Set("TESSERA_LOG_OPS", "1");
  RuntimeFlags flags;
  flags.cpu_plugin_options.push_back({"threads", "8", "--cpu-threads"});
  auto c = RuntimeConfig::FromEnvironment(flags);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->plugin_dirs.size(), 4u);
  EXPECT_EQ(c->plugin_dirs[0], "/a");
  EXPECT_EQ(c->plugin_dirs[1], "/b");
  EXPECT_EQ(c->plugin_dirs[2], c->lib_dir + "/tessera/plugins");
  EXPECT_EQ(c->plugin_dirs[3], c->lib_dir);
  EXPECT_EQ(*c->visible_devices, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(*c->cpu_devices, 3);
  ASSERT_EQ(c->plugin_options.size(), 1u);
  EXPECT_EQ(c->plugin_options[0].key, "threads");
  ASSERT_EQ(c->cpu_plugin_options.size(), 1u);
  EXPECT_EQ(c->cpu_plugin_options[0].source, "--cpu-threads");
  EXPECT_EQ(c->disabled_ops,
            (std::set<tsr_op_id>{TSR_OP_RMS_NORM, TSR_OP_ADD}));
  EXPECT_TRUE(c->log_ops);
}

// A backslash escapes ',' '=' and '\' inside options; FormatPluginOptions
// writes what ParsePluginOptions reads back.
TEST(RuntimeConfigTest, PluginOptionsEscapeCommasAndRoundTrip) {
  auto parsed = ParsePluginOptions(
      R"(cpusets=0-3\,8-11, threads = 4 ,path=a\=b\\c,,)", "TEST");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[0].key, "cpusets");
  EXPECT_EQ((*parsed)[0].value, "0-3,8-11");
  EXPECT_EQ((*parsed)[1].key, "threads");
  EXPECT_EQ((*parsed)[1].value, "4");
  EXPECT_EQ((*parsed)[2].value, R"(a=b\c)");
  auto again = ParsePluginOptions(FormatPluginOptions(*parsed), "TEST");
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*again)[i].key, (*parsed)[i].key);
    EXPECT_EQ((*again)[i].value, (*parsed)[i].value);
  }
  // An unescaped comma still splits: "0-3" then "8-11" is not key=value.
  auto split = ParsePluginOptions("cpusets=0-3,8-11", "TEST");
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("'8-11' is not key=value"),
            std::string::npos)
      << split.status().message();
}

TEST(RuntimeConfigTest, SetButEmptyVisibleDevicesMeansNone) {
  ScopedCleanEnv env;
  env.Set("TESSERA_VISIBLE_DEVICES", "");
  auto c = RuntimeConfig::FromEnvironment();
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->visible_devices.has_value());
  EXPECT_TRUE(c->visible_devices->empty());
}

TEST(RuntimeConfigTest, InvalidValuesNameTheVariable) {
  struct Case {
    const char* name;
    const char* value;
  };
  for (const Case& bad :
       {Case{"TESSERA_CPU_DEVICES", "0"}, Case{"TESSERA_CPU_DEVICES", "two"},
        Case{"TESSERA_CPU_DEVICES", "-3"},
        Case{"TESSERA_VISIBLE_DEVICES", "gpu0"},
        Case{"TESSERA_PLUGIN_OPTIONS", "threads"},
        Case{"TESSERA_DISABLE_OPS", "rms_norm,nosuch"},
        Case{"TESSERA_LOG_OPS", "maybe"}}) {
    ScopedCleanEnv env;
    env.Set(bad.name, bad.value);
    auto c = RuntimeConfig::FromEnvironment();
    ASSERT_FALSE(c.ok()) << bad.name << "=" << bad.value;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(bad.name), std::string::npos)
        << c.status().message();
  }
}

TEST(RuntimeConfigTest, AddOptionsForFutureFlags) {
  RuntimeConfig c;
  c.SetLibDir("/opt/tessera/lib");
  EXPECT_EQ(c.cpu_plugin_path, "/opt/tessera/lib/libtessera_plugin_cpu.so");
  c.AddCpuPluginOption("threads", "4", "--cpu-threads");
  c.AddPluginOption("foo", "bar", "--plugin-option");
  ASSERT_EQ(c.cpu_plugin_options.size(), 1u);
  EXPECT_EQ(c.cpu_plugin_options[0].value, "4");
  ASSERT_EQ(c.plugin_options.size(), 1u);
  c.SetLibDir("/other/lib");
  ASSERT_EQ(c.plugin_dirs.size(), 2u);
  EXPECT_EQ(c.plugin_dirs[0], "/other/lib/tessera/plugins");
  EXPECT_EQ(c.plugin_dirs[1], "/other/lib");
}

// An installed tree (cmake --install) keeps every plugin, the cpu one
// included, in <lib>/tessera/plugins.
TEST(RuntimeConfigTest, InstalledTreeKeepsTheCpuPluginWithTheOthers) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() /
      ("tessera_installed_" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "lib/tessera/plugins");
  { std::ofstream(root / "lib/tessera/plugins/libtessera_plugin_cpu.so") << "x"; }
  RuntimeConfig c;
  c.SetLibDir((root / "lib").string());
  EXPECT_EQ(c.cpu_plugin_path,
            (root / "lib/tessera/plugins/libtessera_plugin_cpu.so").string());
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace tessera::runtime
