// `tessera doctor [--json] [--device-plugin PATH] [--platform NAME]
// [--bandwidth [--bandwidth-bytes N] [--cpu-threads N]] [--skip-conformance]`:
// which plugins were found or rejected and why, the devices and their memory
// (the plugin's 1.7 memory_stats, else the host's count), quick smoke tests
// (copies, ops, all-reduce), the quick conformance subset of plugin-check on
// the selected plugin (a child process; a failing check is exit 1 naming
// it, with the full plugin-check command as the hint) and the op coverage
// table. --bandwidth
// adds the HOST memory read-bandwidth probe (read_bandwidth.h): a line of
// text, or a `bandwidth` object {read_gbps, bytes, threads, ...} in --json.
// A failing probe (e.g. no memory for the buffer) exits 2.
// --tp N adds a cross-process collective smoke: `tessera bench-comm
// --tp-size N` (N rank processes through the plugin's comm_init_rank) over
// all_reduce of 4 KiB .. 16 MiB, printing the 4 KiB latency and the 16 MiB
// bus bandwidth next to a memcpy reference (a `tp` object in --json); a
// plugin without cross-process collectives, or a failing collective, is
// exit 1 with the reason.
//
// Exit codes: 0 all is well; 1 a smoke test failed; 2 no usable device, a
// bad setting, or the requested plugin was rejected (the one-line reason and
// what to do are printed).
#include <fmt/format.h>

#include <unistd.h>

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
  int tp = 0;  // --tp N: the cross-process collective smoke
  uint64_t bandwidth_bytes = uint64_t{1} << 30;
  int cpu_threads = 0;
  bool skip_conformance = false;  // --skip-conformance
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
  // Memory after the smoke tests, so the peak shows what they used.
  for (DoctorDevice& d : report.devices) {
    if (auto memory = runtime.plugin().MemoryFigures(d.ordinal); memory.ok()) {
      d.memory_source = memory->from_plugin ? "plugin" : "host";
      d.memory_in_use = memory->in_use_bytes;
      d.memory_peak = memory->peak_bytes;
      d.memory_limit = memory->limit_bytes;
    }
  }
  if (!options.skip_conformance) {
    std::vector<runtime::PluginOption> plugin_options =
        runtime.config().plugin_options;
    if (runtime.cpu_is_selected()) {
      for (const auto& o : runtime.config().cpu_plugin_options) {
        plugin_options.push_back(o);
      }
    }
    report.conformance =
        RunQuickConformance(runtime.plugin().path(), plugin_options);
  }

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
  if (report.conformance.status == "failed" && failed.empty()) {
    failed = report.conformance.failures.empty()
                 ? fmt::format("quick conformance: {}", report.conformance.detail)
                 : fmt::format("conformance check {} failed: {}",
                               report.conformance.failures[0].first,
                               report.conformance.failures[0].second);
  }
  if (!failed.empty()) {
    report.exit_code = 1;
    report.error = failed;
    report.hint = fmt::format(
        "the {} plugin misbehaves; run `{}` for the full conformance report",
        runtime.plugin().name(),
        report.conformance.command.empty()
            ? "tessera plugin-check " + runtime.plugin().path()
            : report.conformance.command);
  }
  return report;
}

// The --tp smoke: bench-comm in child processes; its JSON, or the reason
// it failed (its stderr).
StatusOr<nlohmann::json> CrossProcessSmoke(const DoctorOptions& options) {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (len <= 0) return InternalError("cannot find this binary (/proc/self/exe)");
  exe[len] = '\0';
  std::string cmd = fmt::format(
      "'{}' bench-comm --tp-size {} --ops all_reduce --min-bytes 4096 "
      "--max-bytes 16777216 --json",
      exe, options.tp);
  if (!options.flags.device_plugin.empty()) {
    cmd += " --device-plugin '" + options.flags.device_plugin + "'";
  }
  if (!options.flags.platform.empty()) cmd += " --platform '" + options.flags.platform + "'";
  char err_path[] = "/tmp/tessera_doctor_tp_XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  cmd += std::string(" 2>") + err_path;
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return InternalError("could not start bench-comm");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int status = pclose(pipe);
  std::string err;
  if (std::FILE* f = std::fopen(err_path, "r")) {
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) err.append(buf, n);
    std::fclose(f);
  }
  std::remove(err_path);
  if (status != 0) {
    // Its last "error:" line is the reason.
    const size_t at = err.rfind("error:");
    std::string reason = at == std::string::npos ? err : err.substr(at + 7);
    while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
    return UnavailableError(reason.empty() ? "bench-comm failed" : reason);
  }
  auto json = nlohmann::json::parse(out, nullptr, false);
  if (json.is_discarded()) return InternalError("bench-comm printed no JSON");
  return json;
}

int RunDoctor(const DoctorOptions& options) {
  auto start = std::chrono::steady_clock::now();
  DoctorReport report = Diagnose(options);
  std::optional<StatusOr<nlohmann::json>> tp;
  if (options.tp > 1 && report.exit_code == 0) {
    tp = CrossProcessSmoke(options);
    if (!tp->ok()) {
      report.exit_code = 1;
      report.error = fmt::format("cross-process collectives ({} ranks): {}", options.tp,
                                 tp->status().message());
      report.hint = "--tp-size > 1 needs a plugin with ABI 1.3 comm_init_rank; run "
                    "`tessera plugin-check` on it (group collectives_mp)";
    }
  }
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
    if (tp && tp->ok()) {
      out["tp"] = {{"ranks", options.tp},
                   {"all_reduce_4k_us", (**tp)["all_reduce_4k_us"]},
                   {"busbw_bytes", (**tp)["busbw_all_reduce_bytes"]},
                   {"busbw_vs_memcpy", (**tp)["busbw_vs_memcpy"]},
                   {"memcpy_gbps", (**tp)["memcpy_gbps"]},
                   {"results", (**tp)["results"]}};
    } else if (tp) {
      out["tp"] = {{"ranks", options.tp}, {"error", tp->status().message()}};
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
    if (tp && tp->ok()) {
      const nlohmann::json& j = **tp;
      double busbw = 0;
      for (const auto& row : j["results"]) busbw = row["busbw_gbps"].get<double>();
      fmt::print(
          "cross-process collectives: {} rank processes, all_reduce 4 KiB {:.1f} us, "
          "16 MiB bus bandwidth {:.2f} GB/s ({:.0f}% of a {:.2f} GB/s memcpy)\n",
          options.tp, j["all_reduce_4k_us"].get<double>(), busbw,
          100.0 * j["busbw_vs_memcpy"].get<double>(), j["memcpy_gbps"].get<double>());
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
  command.app->add_option("--tp", options->tp,
                          "Also run a cross-process collective smoke over N rank processes "
                          "(latency and bandwidth)");
  command.app->add_flag("--skip-conformance", options->skip_conformance,
                        "Skip the quick conformance subset (`tessera "
                        "plugin-check --quick`) on the selected plugin");
  command.run = [options] { return RunDoctor(*options); };
  return command;
}

}  // namespace tessera::cli
