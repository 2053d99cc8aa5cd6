// DoctorReport: everything `tessera doctor` found, and its two renderings
// (a table for people, one JSON object for tools).
//
// JSON shape (stable keys; tests and scripts read them):
//   { "ok": bool, "exit_code": 0|1|2, "error": "...", "hint": "...",
//     "selected_plugin": "cpu", "fallback_plugin": "cpu",
//     "plugins": [{"name","path","status","reason","probe_score",
//                  "abi_version","version","fallback"}],
//     "devices": [{"ordinal","physical_index","name","vendor",
//                  "driver_version","type","memory_total","memory_free",
//                  "alignment","compute_units","dtypes",
//                  "memory": {"in_use","peak","limit","source"}}],
//     "other_devices": {plugin: {"devices": [same shape], "error": "..."}},
//     "smoke": {"copy": [...], "ops": [...], "all_reduce": {...}},
//     "conformance": {"status","passed","failed","skipped","seconds",
//                     "failures": [{"check","message"}],"detail","command"},
//     "ops": {plugin: {op: "native"|"fallback"|"unavailable"}},
//     "disabled_ops": [...], "elapsed_ms": n }
// A plain value type.
#ifndef TESSERA_CLI_DOCTOR_REPORT_H_
#define TESSERA_CLI_DOCTOR_REPORT_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/plugin_discovery.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::cli {

struct DoctorDevice {
  int32_t ordinal = 0;
  tsr_device_properties properties{};
  // The plugin's memory_stats (source "plugin", ABI 1.7) or the host's count
  // ("host"); source "" when not read (another plugin's devices).
  std::string memory_source;
  uint64_t memory_in_use = 0;
  uint64_t memory_peak = 0;
  uint64_t memory_limit = 0;
};

// H2D/D2H copy of `bytes` on one device, best of a few runs.
struct CopyCheck {
  std::string device;  // "cpu:0"
  bool ok = false;
  uint64_t bytes = 0;
  double h2d_gbps = 0;
  double d2h_gbps = 0;
  std::string error;
};

// One op run through the dispatcher and compared with a host computation.
struct OpCheck {
  std::string op;
  std::string route;  // native | fallback
  bool ok = false;
  double max_abs_error = 0;
  std::string error;
};

struct AllReduceCheck {
  std::string status = "skipped";  // passed | failed | skipped
  int devices = 0;
  std::string detail;
};

// `tessera plugin-check --quick` on the selected plugin, in a child process.
struct QuickConformance {
  std::string status = "skipped";  // passed | failed | skipped
  int passed = 0;
  int failed = 0;
  int skipped = 0;
  // The failed checks: name and plugin-check's message.
  std::vector<std::pair<std::string, std::string>> failures;
  double seconds = 0;
  std::string detail;  // why skipped, or why the run itself failed
  std::string command;  // the full kit, for the hint
};

struct DoctorReport {
  int exit_code = 0;
  std::string error;  // one line: why exit_code is not 0
  std::string hint;   // what to do about it
  std::string selected_plugin;
  std::string fallback_plugin;
  std::vector<runtime::PluginCandidate> plugins;
  std::vector<DoctorDevice> devices;
  // The devices of every other plugin that has hardware here (e.g. the
  // OpenCL devices while cpu is selected), or why they could not be listed.
  struct OtherDevices {
    std::vector<DoctorDevice> devices;
    std::string error;
  };
  std::map<std::string, OtherDevices> other_devices;
  std::vector<CopyCheck> copies;
  std::vector<OpCheck> op_checks;
  AllReduceCheck all_reduce;
  QuickConformance conformance;
  // plugin name -> op name -> native | fallback | unavailable
  std::map<std::string, std::map<std::string, std::string>> coverage;
  std::vector<std::string> disabled_ops;
  double elapsed_ms = 0;

  bool ok() const { return exit_code == 0; }
};

nlohmann::json DoctorReportToJson(const DoctorReport& report);
std::string DoctorReportToText(const DoctorReport& report);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_DOCTOR_REPORT_H_
