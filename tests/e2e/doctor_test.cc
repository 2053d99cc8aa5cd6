// `tessera doctor` end to end: runs the built binary with flags and
// environment variables, checks exit codes, messages and the --json object.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "testing/platforms.h"
#include "testing/subprocess.h"

namespace {

using Result = tessera::testing::CommandResult;

// Runs `tessera doctor <args>` with exactly the TESSERA_* variables in `env`
// (all others unset). Merges stderr into `out` when `with_stderr`.
Result Doctor(const std::string& args,
              const std::map<std::string, std::string>& env = {},
              bool with_stderr = true) {
  std::string command = "env";
  for (const char* name :
       {"TESSERA_DEVICE_PLUGIN", "TESSERA_PLATFORM", "TESSERA_PLUGIN_PATH",
        "TESSERA_VISIBLE_DEVICES", "TESSERA_CPU_DEVICES",
        "TESSERA_PLUGIN_OPTIONS", "TESSERA_DISABLE_OPS", "TESSERA_LOG_OPS"}) {
    command += std::string(" -u ") + name;
  }
  for (const auto& [key, value] : env) {
    command += " " + key + "='" + value + "'";
  }
  command += std::string(" ") + TSR_TESSERA_BIN + " doctor " + args;
  command += with_stderr ? " 2>&1" : " 2>/dev/null";
  return tessera::testing::RunShell(command, /*capture_stderr=*/false);
}

nlohmann::json DoctorJson(const std::string& args,
                          const std::map<std::string, std::string>& env = {},
                          int expected_exit = 0) {
  Result r = Doctor("--json " + args, env, /*with_stderr=*/false);
  EXPECT_EQ(r.exit_code, expected_exit) << r.out;
  auto parsed =
      nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded()) << "not JSON:\n" << r.out;
  return parsed;
}

bool Contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

const nlohmann::json* FindPlugin(const nlohmann::json& j,
                                 const std::string& name) {
  for (const auto& p : j["plugins"]) {
    if (p["name"] == name) return &p;
  }
  return nullptr;
}

TEST(DoctorTest, PassesAndListsTheCpuPlugin) {
  Result r = Doctor("");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "selected")) << r.out;
  EXPECT_TRUE(Contains(r.out, "libtessera_plugin_cpu.so")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Op coverage")) << r.out;
  EXPECT_TRUE(Contains(r.out, "Result: OK")) << r.out;
}

TEST(DoctorTest, JsonHasTheDocumentedKeys) {
  nlohmann::json j = DoctorJson("");
  for (const char* key : {"ok", "plugins", "devices", "smoke", "ops"}) {
    EXPECT_TRUE(j.contains(key)) << key << " missing in " << j.dump(2);
  }
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["selected_plugin"], "cpu");
  const nlohmann::json* cpu = FindPlugin(j, "cpu");
  ASSERT_NE(cpu, nullptr) << j.dump(2);
  for (const char* key : {"name", "path", "status", "reason"}) {
    EXPECT_TRUE(cpu->contains(key)) << key;
  }
  EXPECT_EQ((*cpu)["status"], "selected");
  EXPECT_GE(j["devices"].size(), 1u);
  EXPECT_TRUE(j["devices"][0].contains("physical_index"));
  // Smoke tests ran and passed.
  ASSERT_GE(j["smoke"]["copy"].size(), 1u);
  EXPECT_EQ(j["smoke"]["copy"][0]["ok"], true);
  EXPECT_GT(j["smoke"]["copy"][0]["h2d_gbps"].get<double>(), 0.0);
  ASSERT_EQ(j["smoke"]["ops"].size(), 3u);
  for (const auto& op : j["smoke"]["ops"]) {
    EXPECT_EQ(op["ok"], true) << op.dump();
    EXPECT_EQ(op["route"], "native") << op.dump();
  }
  EXPECT_EQ(j["smoke"]["all_reduce"]["status"], "passed")
      << j["smoke"]["all_reduce"].dump();
  // Every v1 op and the fused decoder_layer are native on the cpu plugin.
  ASSERT_TRUE(j["ops"].contains("cpu"));
  EXPECT_EQ(j["ops"]["cpu"].size(), 14u);
  for (const auto& [op, route] : j["ops"]["cpu"].items()) {
    EXPECT_EQ(route, "native") << op;
  }
  // The quick conformance subset ran on the selected plugin and passed;
  // the device's memory comes from the cpu plugin's memory_stats (ABI 1.7).
  EXPECT_EQ(j["conformance"]["status"], "passed") << j["conformance"].dump(2);
  EXPECT_GT(j["conformance"]["passed"].get<int>(), 50);
  EXPECT_EQ(j["conformance"]["failed"], 0);
  const nlohmann::json& memory = j["devices"][0]["memory"];
  EXPECT_EQ(memory["source"], "plugin") << memory.dump();
  EXPECT_GT(memory["limit"].get<uint64_t>(), 0u);
  EXPECT_GE(memory["peak"].get<uint64_t>(), memory["in_use"].get<uint64_t>());
  // Smoke tests and the conformance subset (a child process) together.
  EXPECT_LT(j["elapsed_ms"].get<double>(), 5000.0);
}

TEST(DoctorTest, CpuDevicesChangesTheDeviceCount) {
  nlohmann::json j = DoctorJson("", {{"TESSERA_CPU_DEVICES", "3"}});
  ASSERT_EQ(j["devices"].size(), 3u) << j.dump(2);
  EXPECT_EQ(j["smoke"]["copy"].size(), 3u);
  EXPECT_EQ(j["smoke"]["all_reduce"]["status"], "passed");
  EXPECT_EQ(j["smoke"]["all_reduce"]["devices"], 3);
}

TEST(DoctorTest, VisibleDevicesFilterBeforeNumbering) {
  nlohmann::json j = DoctorJson(
      "", {{"TESSERA_CPU_DEVICES", "3"}, {"TESSERA_VISIBLE_DEVICES", "0,2"}});
  ASSERT_EQ(j["devices"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["devices"][0]["ordinal"], 0);
  EXPECT_EQ(j["devices"][0]["physical_index"], 0);
  EXPECT_EQ(j["devices"][1]["ordinal"], 1);
  EXPECT_EQ(j["devices"][1]["physical_index"], 2);
}

TEST(DoctorTest, EmptyVisibleDevicesMeansNoUsableDevice) {
  Result r = Doctor("", {{"TESSERA_VISIBLE_DEVICES", ""}});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "no usable device")) << r.out;
  EXPECT_TRUE(Contains(r.out, "TESSERA_VISIBLE_DEVICES")) << r.out;
  nlohmann::json j = DoctorJson("", {{"TESSERA_VISIBLE_DEVICES", ""}}, 2);
  EXPECT_EQ(j["ok"], false);
  EXPECT_EQ(j["devices"].size(), 0u);
}

TEST(DoctorTest, InvalidSettingsAreClearErrors) {
  Result r = Doctor("", {{"TESSERA_VISIBLE_DEVICES", "gpu1"}});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "TESSERA_VISIBLE_DEVICES='gpu1'")) << r.out;
  r = Doctor("", {{"TESSERA_CPU_DEVICES", "zero"}});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "TESSERA_CPU_DEVICES")) << r.out;
}

TEST(DoctorTest, DisabledOpShowsAsFallback) {
  nlohmann::json j = DoctorJson("", {{"TESSERA_DISABLE_OPS", "rms_norm"}});
  EXPECT_EQ(j["ok"], true) << j.dump(2);
  EXPECT_EQ(j["ops"]["cpu"]["rms_norm"], "fallback");
  EXPECT_EQ(j["ops"]["cpu"]["linear"], "native");
  EXPECT_EQ(j["disabled_ops"], nlohmann::json::array({"rms_norm"}));
  for (const auto& op : j["smoke"]["ops"]) {
    if (op["op"] == "rms_norm") {
      EXPECT_EQ(op["route"], "fallback");
    }
  }
}

// The OpenCL plugin (PoCL here): doctor lists its devices even while cpu is
// selected, runs its smoke tests with --platform opencl, and shows an op
// disabled there as a cpu fallback.
TEST(DoctorTest, ListsOpenClDevicesAndItsFallbacks) {
  TSR_REQUIRE_PLATFORM(TSR_TESSERA_BIN, "opencl");
  nlohmann::json all = DoctorJson("");
  EXPECT_EQ(all["selected_plugin"], "cpu");
  ASSERT_TRUE(all["other_devices"].contains("opencl")) << all.dump(2);
  const auto& opencl = all["other_devices"]["opencl"];
  EXPECT_EQ(opencl["error"], "") << opencl.dump(2);
  ASSERT_GE(opencl["devices"].size(), 1u) << opencl.dump(2);
  EXPECT_GT(opencl["devices"][0]["memory_total"].get<uint64_t>(), 0u);
  EXPECT_GT(opencl["devices"][0]["compute_units"].get<int>(), 0);

  nlohmann::json j = DoctorJson("--platform opencl", {{"TESSERA_DISABLE_OPS", "paged_attention"}});
  EXPECT_EQ(j["ok"], true) << j.dump(2);
  EXPECT_EQ(j["selected_plugin"], "opencl");
  EXPECT_EQ(j["fallback_plugin"], "cpu");
  EXPECT_EQ(j["ops"]["opencl"]["paged_attention"], "fallback");
  EXPECT_EQ(j["ops"]["opencl"]["linear"], "native");
  Result text = Doctor("--platform opencl", {{"TESSERA_DISABLE_OPS", "paged_attention"}});
  EXPECT_TRUE(Contains(text.out, "Devices (plugin opencl)")) << text.out;
  EXPECT_TRUE(Contains(text.out, "paged_attention  fallback")) << text.out;
}

TEST(DoctorTest, UnknownDisabledOpListsValidNames) {
  Result r = Doctor("", {{"TESSERA_DISABLE_OPS", "rms_norm,softmax"}});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "softmax")) << r.out;
  for (const char* name :
       {"embedding", "rms_norm", "add_rms_norm", "linear", "rope", "kv_store",
        "paged_attention", "silu_and_mul", "add", "cast", "argmax", "sample",
        "logprobs"}) {
    EXPECT_TRUE(Contains(r.out, name)) << name;
  }
}

TEST(DoctorTest, UnknownPlatformIsExit2) {
  Result r = Doctor("--platform nosuch");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "no plugin named 'nosuch'")) << r.out;
  r = Doctor("", {{"TESSERA_PLATFORM", "nosuch"}});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_TRUE(Contains(r.out, "TESSERA_PLATFORM")) << r.out;
}

TEST(DoctorTest, MinimalPluginWithCpuFallback) {
  nlohmann::json j =
      DoctorJson(std::string("--device-plugin ") + TSR_MINIMAL_PLUGIN);
  EXPECT_EQ(j["ok"], true) << j.dump(2);
  EXPECT_EQ(j["selected_plugin"], "minimal");
  EXPECT_EQ(j["fallback_plugin"], "cpu");
  EXPECT_EQ(j["ops"]["minimal"]["add"], "native");
  EXPECT_EQ(j["ops"]["minimal"]["cast"], "native");
  EXPECT_EQ(j["ops"]["minimal"]["rms_norm"], "fallback");
  EXPECT_EQ(j["ops"]["minimal"]["linear"], "fallback");
  for (const auto& op : j["smoke"]["ops"]) {
    EXPECT_EQ(op["ok"], true) << op.dump();
    EXPECT_EQ(op["route"], op["op"] == "add" ? "native" : "fallback");
  }
  EXPECT_EQ(j["smoke"]["all_reduce"]["status"], "skipped");
  EXPECT_EQ(j["smoke"]["all_reduce"]["detail"], "plugin has no collectives");
  // No memory_stats in the minimal plugin: the host's own count.
  EXPECT_EQ(j["devices"][0]["memory"]["source"], "host");
  EXPECT_EQ(j["conformance"]["status"], "passed") << j["conformance"].dump(2);
  Result text =
      Doctor(std::string("--platform minimal"),
             {{"TESSERA_PLUGIN_PATH",
               std::string(TSR_MINIMAL_PLUGIN)
                   .substr(0, std::string(TSR_MINIMAL_PLUGIN).rfind('/'))}});
  EXPECT_EQ(text.exit_code, 0) << text.out;
  EXPECT_TRUE(Contains(text.out, "skipped: plugin has no collectives"))
      << text.out;
}

// Each broken plugin is rejected, by flag and by variable, with exit 2 and
// a message naming the cause.
struct BrokenCase {
  const char* path;
  std::vector<std::string> needles;
};

std::vector<BrokenCase> BrokenCases() {
  return {
      {TSR_NOENTRY_PLUGIN, {"tsr_get_plugin_api"}},
      {TSR_ABI2_PLUGIN, {"2.0", "1.0"}},
      {TSR_MISSINGDEP_PLUGIN, {"libtessera_missing_dep.so"}},
      {TSR_WIDGET_PLUGIN, {"no hardware", "Widget"}},
  };
}

TEST(DoctorTest, BrokenPluginByFlagIsRejected) {
  for (const BrokenCase& c : BrokenCases()) {
    Result r = Doctor(std::string("--device-plugin ") + c.path);
    EXPECT_EQ(r.exit_code, 2) << c.path << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "--device-plugin")) << r.out;
    for (const auto& needle : c.needles) {
      EXPECT_TRUE(Contains(r.out, needle)) << needle << " in\n" << r.out;
    }
  }
}

TEST(DoctorTest, BrokenPluginByVariableIsRejected) {
  for (const BrokenCase& c : BrokenCases()) {
    Result r = Doctor("", {{"TESSERA_DEVICE_PLUGIN", c.path}});
    EXPECT_EQ(r.exit_code, 2) << c.path << "\n" << r.out;
    EXPECT_TRUE(Contains(r.out, "TESSERA_DEVICE_PLUGIN")) << r.out;
    for (const auto& needle : c.needles) {
      EXPECT_TRUE(Contains(r.out, needle)) << needle << " in\n" << r.out;
    }
    nlohmann::json j = DoctorJson("", {{"TESSERA_DEVICE_PLUGIN", c.path}}, 2);
    EXPECT_EQ(j["ok"], false);
    ASSERT_TRUE(j.contains("error"));
    for (const auto& needle : c.needles) {
      EXPECT_TRUE(Contains(j["error"].get<std::string>(), needle)) << needle;
    }
  }
}

TEST(DoctorTest, DiscoveryListsBrokenPluginsWithReasons) {
  // With the broken plugins on the search path, the cpu plugin still wins
  // and each broken one is listed with its reason.
  nlohmann::json j =
      DoctorJson("", {{"TESSERA_PLUGIN_PATH", TSR_BROKEN_PLUGIN_DIR}});
  EXPECT_EQ(j["ok"], true) << j.dump(2);
  EXPECT_EQ(j["selected_plugin"], "cpu");
  struct Expect {
    const char* name;
    const char* status;
    const char* needle;
  };
  for (const Expect& e :
       {Expect{"noentry", "rejected", "tsr_get_plugin_api"},
        Expect{"abi2", "rejected", "2.0"},
        Expect{"missingdep", "rejected", "libtessera_missing_dep.so"},
        Expect{"widget", "no-hardware", "/dev/widget0"}}) {
    const nlohmann::json* p = FindPlugin(j, e.name);
    ASSERT_NE(p, nullptr) << e.name << " not listed:\n" << j.dump(2);
    EXPECT_EQ((*p)["status"], e.status) << e.name;
    EXPECT_TRUE(Contains((*p)["reason"].get<std::string>(), e.needle))
        << e.name << ": " << (*p)["reason"];
  }
  EXPECT_EQ((*FindPlugin(j, "widget"))["probe_score"], 0);
  EXPECT_TRUE((*FindPlugin(j, "noentry"))["probe_score"].is_null());
  // A table readable but rejected still reports the ABI it claims.
  EXPECT_EQ((*FindPlugin(j, "abi2"))["abi_version"], "2.0");
}

// A plugin that crashes as it is loaded does not take doctor down: the
// trial load in a child process names the signal, and the cpu plugin is
// still selected.
TEST(DoctorTest, PluginCrashingOnLoadIsReportedNotFatal) {
  nlohmann::json j = DoctorJson(
      "", {{"TESSERA_PLUGIN_PATH",
            std::string(TSR_BROKEN_PLUGIN_DIR) + "/crashing"}});
  EXPECT_EQ(j["ok"], true) << j.dump(2);
  EXPECT_EQ(j["selected_plugin"], "cpu");
  const nlohmann::json* p = FindPlugin(j, "crash");
  ASSERT_NE(p, nullptr) << j.dump(2);
  EXPECT_EQ((*p)["status"], "rejected");
  EXPECT_TRUE(Contains((*p)["reason"].get<std::string>(), "SIGSEGV"))
      << (*p)["reason"];
  // Chosen explicitly, it is the same clear failure, not a crash.
  Result chosen = Doctor("", {{"TESSERA_DEVICE_PLUGIN",
                               std::string(TSR_BROKEN_PLUGIN_DIR) +
                                   "/crashing/libtessera_plugin_crash.so"}});
  EXPECT_EQ(chosen.exit_code, 2) << chosen.out;
  EXPECT_TRUE(Contains(chosen.out, "SIGSEGV")) << chosen.out;
}

}  // namespace
