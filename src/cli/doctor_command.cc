// `tessera doctor [--json] [--device-plugin PATH] [--platform NAME]
// [--bandwidth [--bandwidth-bytes N] [--cpu-threads N]]`:
// which plugins were found or rejected and why, the devices, quick smoke
// tests (copies, ops, all-reduce) and the op coverage table. --bandwidth
// adds the HOST memory read-bandwidth probe (read_bandwidth.h): a line of
// text, or a `bandwidth` object {read_gbps, bytes, threads, ...} in --json.
// A failing probe (e.g. no memory for the buffer) exits 2.
//
// Exit codes: 0 all is well; 1 a smoke test failed; 2 no usable device, a
// bad setting, or the requested plugin was rejected (the one-line reason and
// what to do are printed).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/doctor_checks.h"
#include "cli/doctor_report.h"
#include "cli/cli_io.h"
#include "prompt/prompt_tools.h"
#include "cli/read_bandwidth.h"
#include "conformance/runner.h"
#include "runtime/op_names.h"
#include "runtime/plugin_discovery.h"
#include "runtime/runtime.h"

namespace tessera::cli {
namespace {

struct DoctorOptions {
  bool json = false;
  runtime::RuntimeFlags flags;
  bool bandwidth = false;
  uint64_t bandwidth_bytes = uint64_t{1} << 30;
  int cpu_threads = 0;
};

constexpr uint64_t kCopyBytes = 4u << 20;  // 4 MiB per device

std::string HintFor(const Status& status,
                    const runtime::RuntimeConfig* config) {
  if (status.code() == StatusCode::kInvalidArgument) {
    return "fix or unset the setting named above";
  }
  if (config != nullptr && !config->selection_source.empty()) {
    return fmt::format(
        "follow the error above, or run `tessera doctor` without {} to see "
        "the plugins that work here",
        config->selection_source);
  }
  return "see the plugin list above for each plugin's reason";
}

void Fill(DoctorReport& report, runtime::Runtime& rt) {
  report.selected_plugin = rt.plugin().name();
  report.fallback_plugin = rt.cpu_plugin().name();
  for (tsr_op_id op : rt.config().disabled_ops) {
    report.disabled_ops.push_back(runtime::OpName(op));
  }
  for (const auto& device : rt.devices()) {
    report.devices.push_back({device->ordinal(), device->properties()});
  }
  auto& selected = report.coverage[rt.plugin().name()];
  for (tsr_op_id op : runtime::AllOpsV1()) {
    selected[runtime::OpName(op)] =
        std::string(runtime::OpRouteName(rt.dispatcher().Coverage(op)));
  }
  // A fused op never falls back: without it the host runs its op sequence.
  for (tsr_op_id op : runtime::FusedOps()) {
    selected[runtime::OpName(op)] =
        !rt.dispatcher().IsDisabled(op) && rt.plugin().ListsOp(op)
            ? "native"
            : "not offered (runs as its v1 op sequence)";
  }
  if (!rt.cpu_is_selected()) {
    auto& cpu = report.coverage[rt.cpu_plugin().name()];
    for (tsr_op_id op : runtime::AllOpsV1()) {
      cpu[runtime::OpName(op)] =
          rt.cpu_plugin().ListsOp(op) ? "native" : "unavailable";
    }
  }
}

// The devices of an initialised plugin.
Status ListDevices(const runtime::Plugin& plugin, std::vector<DoctorDevice>* out) {
  TSR_ASSIGN_OR_RETURN(int32_t count, plugin.DeviceCount());
  for (int32_t i = 0; i < count; ++i) {
    TSR_ASSIGN_OR_RETURN(tsr_device_properties props, plugin.DeviceProperties(i));
    out->push_back({i, props});
  }
  return OkStatus();
}

// Lists the devices of every plugin with hardware here besides the selected
// one, so e.g. the OpenCL devices show while cpu is selected.
void FillOtherDevices(DoctorReport& report, runtime::Runtime& rt) {
  for (const auto& candidate : report.plugins) {
    if (candidate.status != runtime::CandidateStatus::kAvailable) continue;
    DoctorReport::OtherDevices& other = report.other_devices[candidate.name];
    Status listed;
    if (candidate.fallback) {
      listed = ListDevices(rt.cpu_plugin(), &other.devices);
    } else {
      runtime::LoadedCandidate loaded = runtime::LoadCandidate(candidate.path);
      listed = loaded.plugin == nullptr
                   ? InternalError(loaded.record.reason)
                   : loaded.plugin->Init({});
      if (listed.ok()) listed = ListDevices(*loaded.plugin, &other.devices);
    }
    if (!listed.ok()) other.error = listed.message();
  }
}

// Loads, probes and initialises every plugin file once in a child process
// before this process touches any: a plugin that crashes, aborts or exits
// there (in its library constructor or an entry) is excluded with the
// signal or exit code as its reason, instead of taking doctor down.
void ScreenPluginsInChildren(runtime::RuntimeConfig& config) {
  constexpr double kTrialTimeoutS = 60;
  std::vector<std::string> explicit_paths;
  if (!config.device_plugin_path.empty()) {
    explicit_paths.push_back(config.device_plugin_path);
  }
  std::vector<std::string> files =
      runtime::FindPluginFiles(explicit_paths, config.plugin_dirs);
  if (!config.cpu_plugin_path.empty()) files.push_back(config.cpu_plugin_path);
  for (const std::string& file : files) {
    auto trial = conformance::RunIsolated(
        [&file] {
          runtime::LoadedCandidate c = runtime::LoadCandidate(file);
          if (c.plugin != nullptr && c.record.probe_score > 0) {
            (void)c.plugin->Init({});
          }
          return 0;
        },
        kTrialTimeoutS);
    if (trial.ok()) continue;
    config.excluded_plugins.emplace_back(
        file, fmt::format("crashed when loaded in a separate process ({}); "
                          "it was not loaded here — run `tessera "
                          "plugin-check {}` for the failing step",
                          trial.status().message(), file));
  }
}

DoctorReport Diagnose(const DoctorOptions& options) {
  DoctorReport report;
  auto config = runtime::RuntimeConfig::FromEnvironment(options.flags);
  if (!config.ok()) {
    report.exit_code = 2;
    report.error = config.status().message();
    report.hint = HintFor(config.status(), nullptr);
    return report;
  }
  ScreenPluginsInChildren(*config);
  auto rt = runtime::Runtime::Create(*config, &report.plugins);
  if (!rt.ok()) {
    report.exit_code = 2;
    report.error = rt.status().message();
    report.hint = HintFor(rt.status(), &*config);
    return report;
  }
  runtime::Runtime& runtime = **rt;
  Fill(report, runtime);
  FillOtherDevices(report, runtime);
  if (Status usable = runtime.CheckUsable(); !usable.ok()) {
    report.exit_code = 2;
    report.error = usable.message();
    report.hint = config->visible_devices
                      ? "unset TESSERA_VISIBLE_DEVICES or list devices that "
                        "exist"
                      : "check the driver, or choose another plugin with "
                        "--platform";
    return report;
  }
  for (const auto& device : runtime.devices()) {
    report.copies.push_back(RunCopyCheck(*device, kCopyBytes));
  }
  report.op_checks = RunOpChecks(runtime);
  report.all_reduce = RunAllReduceCheck(runtime);

  std::string failed;
  for (const auto& c : report.copies) {
    if (!c.ok && failed.empty()) {
      failed = fmt::format("copy test on {}: {}", c.device, c.error);
    }
  }
  for (const auto& o : report.op_checks) {
    if (!o.ok && failed.empty()) {
      failed = fmt::format("op test {} ({}): {}", o.op, o.route, o.error);
    }
  }
  if (report.all_reduce.status == "failed" && failed.empty()) {
    failed = fmt::format("all-reduce test: {}", report.all_reduce.detail);
  }
  if (!failed.empty()) {
    report.exit_code = 1;
    report.error = failed;
    report.hint = fmt::format(
        "the {} plugin misbehaves; run `tessera plugin-check {}` for the "
        "full conformance report",
        runtime.plugin().name(), runtime.plugin().path());
  }
  return report;
}

int RunDoctor(const DoctorOptions& options) {
  auto start = std::chrono::steady_clock::now();
  DoctorReport report = Diagnose(options);
  report.elapsed_ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  std::optional<StatusOr<ReadBandwidthResult>> bandwidth;
  if (options.bandwidth) {
    ReadBandwidthOptions bw;
    bw.bytes = options.bandwidth_bytes;
    bw.threads = options.cpu_threads;
    bandwidth = MeasureReadBandwidth(bw);
  }
  if (options.json) {
    nlohmann::json out = DoctorReportToJson(report);
    if (bandwidth && bandwidth->ok()) {
      out["bandwidth"] =
          nlohmann::json::parse(ReadBandwidthToJson(**bandwidth).dump());
    } else if (bandwidth) {
      out["bandwidth"] = {{"error", bandwidth->status().message()}};
    }
    fmt::print("{}\n", out.dump(2));
  } else {
    fmt::print("{}", DoctorReportToText(report));
    if (bandwidth && bandwidth->ok()) {
      fmt::print(
          "host memory read bandwidth: {:.2f} GB/s ({} threads over {} MiB, "
          "best of {}; the host's memory, what the cpu plugin's decode is "
          "bound by, not an accelerator's)\n",
          (*bandwidth)->read_gbps, (*bandwidth)->threads,
          (*bandwidth)->bytes >> 20, (*bandwidth)->repetitions);
    }
  }
  std::fflush(stdout);
  if (bandwidth && !bandwidth->ok()) {
    ReportError(bandwidth->status().WithContext("--bandwidth"), 2);
    return report.exit_code != 0 ? report.exit_code : 2;
  }
  return report.exit_code;
}

}  // namespace

Command AddDoctorCommand(CLI::App& root) {
  auto options = std::make_shared<DoctorOptions>();
  Command command;
  command.app = root.add_subcommand(
      "doctor",
      "Check plugins, devices and ops: what was found or rejected and why, "
      "quick copy/op/all-reduce tests, op coverage. Exit 0: all well; 1: a "
      "smoke test failed; 2: no usable device");
  command.app->add_flag("--json", options->json,
                        "Print one JSON object instead of tables");
  command.app->add_option("--device-plugin", options->flags.device_plugin,
                          "Use this plugin .so (beats TESSERA_DEVICE_PLUGIN)");
  command.app->add_option("--platform", options->flags.platform,
                          "Use the plugin with this name, e.g. cpu (beats "
                          "TESSERA_PLATFORM)");
  command.app->add_flag("--bandwidth", options->bandwidth,
                        "Also measure the host memory read bandwidth (GB/s)");
  command.app
      ->add_option("--bandwidth-bytes", options->bandwidth_bytes,
                   "With --bandwidth: bytes read per pass")
      ->capture_default_str();
  command.app->add_option("--cpu-threads", options->cpu_threads,
                          "With --bandwidth: reading threads (0: all)");
  command.run = [options] { return RunDoctor(*options); };
  return command;
}

}  // namespace tessera::cli
