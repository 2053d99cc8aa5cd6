#include "cli/doctor_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/dtype.h"
#include "runtime/op_names.h"

namespace tessera::cli {
namespace {

std::string DeviceType(tsr_device_type type) {
  switch (type) {
    case TSR_DEVICE_CPU:
      return "cpu";
    case TSR_DEVICE_GPU:
      return "gpu";
    case TSR_DEVICE_ACCELERATOR:
      return "accelerator";
  }
  return "unknown";
}

std::vector<std::string> DTypes(uint64_t mask) {
  std::vector<std::string> out;
  for (int d = 1; d < TSR_DTYPE_COUNT_V1; ++d) {
    if (mask & (uint64_t{1} << d)) out.emplace_back(DTypeName(d));
  }
  return out;
}

std::string GiB(uint64_t bytes) {
  return fmt::format("{:.1f}", double(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

nlohmann::json DevicesToJson(const std::vector<DoctorDevice>& list) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : list) {
    const auto& p = d.properties;
    devices.push_back({
        {"ordinal", d.ordinal},
        {"physical_index", p.physical_index},
        {"name", p.name},
        {"vendor", p.vendor},
        {"driver_version", p.driver_version},
        {"type", DeviceType(p.type)},
        {"memory_total", p.memory_total},
        {"memory_free", p.memory_free},
        {"alignment", p.alignment},
        {"compute_units", p.compute_units},
        {"dtypes", DTypes(p.dtype_mask)},
    });
    if (!d.memory_source.empty()) {
      devices.back()["memory"] = {{"in_use", d.memory_in_use},
                                  {"peak", d.memory_peak},
                                  {"limit", d.memory_limit},
                                  {"source", d.memory_source}};
    }
  }
  return devices;
}

std::string DevicesToText(const std::vector<DoctorDevice>& list) {
  std::string out;
  if (list.empty()) out += "  (none)\n";
  for (const auto& d : list) {
    const auto& p = d.properties;
    out += fmt::format(
        "  [{}] {} (physical {}, {}, {})\n      memory {}/{} GiB free, "
        "alignment {} B, {} compute units, dtypes {}{}\n",
        d.ordinal, p.name, p.physical_index, DeviceType(p.type), p.vendor,
        GiB(p.memory_free), GiB(p.memory_total), p.alignment, p.compute_units,
        Join(DTypes(p.dtype_mask), " "),
        p.driver_version[0] ? fmt::format(", driver {}", p.driver_version) : "");
    if (!d.memory_source.empty()) {
      out += fmt::format(
          "      in use {:.1f} MiB, peak {:.1f} MiB, limit {} ({})\n",
          d.memory_in_use / 1048576.0, d.memory_peak / 1048576.0,
          d.memory_limit == 0 ? "unknown" : GiB(d.memory_limit) + " GiB",
          d.memory_source == "plugin"
              ? "the plugin's memory_stats"
              : "the host's buffers; the plugin has no memory_stats");
    }
  }
  return out;
}

}  // namespace

nlohmann::json DoctorReportToJson(const DoctorReport& r) {
  using nlohmann::json;
  json out = json::object();
  out["ok"] = r.ok();
  out["exit_code"] = r.exit_code;
  if (!r.error.empty()) out["error"] = r.error;
  if (!r.hint.empty()) out["hint"] = r.hint;
  out["selected_plugin"] = r.selected_plugin;
  out["fallback_plugin"] = r.fallback_plugin;
  json plugins = json::array();
  for (const auto& p : r.plugins) {
    plugins.push_back({
        {"name", p.name},
        {"path", p.path},
        {"status", std::string(runtime::CandidateStatusName(p.status))},
        {"reason", p.reason},
        {"probe_score",
         p.probe_score < 0 ? json(nullptr) : json(p.probe_score)},
        {"abi_version", p.abi_version},
        {"version", p.version},
        {"fallback", p.fallback},
    });
  }
  out["plugins"] = plugins;
  out["devices"] = DevicesToJson(r.devices);
  json other = json::object();
  for (const auto& [name, o] : r.other_devices) {
    other[name] = {{"devices", DevicesToJson(o.devices)}, {"error", o.error}};
  }
  out["other_devices"] = other;
  json copies = json::array();
  for (const auto& c : r.copies) {
    json entry = {{"device", c.device},
                  {"ok", c.ok},
                  {"bytes", c.bytes},
                  {"h2d_gbps", c.h2d_gbps},
                  {"d2h_gbps", c.d2h_gbps}};
    if (!c.error.empty()) entry["error"] = c.error;
    copies.push_back(entry);
  }
  json ops = json::array();
  for (const auto& o : r.op_checks) {
    json entry = {{"op", o.op},
                  {"route", o.route},
                  {"ok", o.ok},
                  {"max_abs_error", o.max_abs_error}};
    if (!o.error.empty()) entry["error"] = o.error;
    ops.push_back(entry);
  }
  out["smoke"] = {
      {"copy", copies},
      {"ops", ops},
      {"all_reduce",
       {{"status", r.all_reduce.status},
        {"devices", r.all_reduce.devices},
        {"detail", r.all_reduce.detail}}},
  };
  const QuickConformance& q = r.conformance;
  json failures = json::array();
  for (const auto& [check, message] : q.failures) {
    failures.push_back({{"check", check}, {"message", message}});
  }
  out["conformance"] = {{"status", q.status},     {"passed", q.passed},
                        {"failed", q.failed},     {"skipped", q.skipped},
                        {"seconds", q.seconds},   {"failures", failures},
                        {"detail", q.detail},     {"command", q.command}};
  json coverage = json::object();
  for (const auto& [plugin, table] : r.coverage) {
    json entries = json::object();
    for (const auto& [op, route] : table) entries[op] = route;
    coverage[plugin] = entries;
  }
  out["ops"] = coverage;
  out["disabled_ops"] = r.disabled_ops;
  out["elapsed_ms"] = r.elapsed_ms;
  return out;
}

std::string DoctorReportToText(const DoctorReport& r) {
  std::string out = "Tessera doctor\n\nPlugins\n";
  if (r.plugins.empty()) out += "  (none found)\n";
  for (const auto& p : r.plugins) {
    std::string score = p.probe_score < 0 ? "-" : std::to_string(p.probe_score);
    out += fmt::format("  {:<12} {:<12} score {:<4} abi {:<4} {}\n",
                       runtime::CandidateStatusName(p.status), p.name, score,
                       p.abi_version.empty() ? "-" : p.abi_version, p.path);
    std::string reason = p.reason;
    if (p.fallback && p.status == runtime::CandidateStatus::kSelected) {
      reason += "; also the op fallback";
    }
    if (!reason.empty()) out += fmt::format("{:>15}{}\n", "-> ", reason);
  }

  if (!r.selected_plugin.empty()) {
    out += fmt::format("\nDevices (plugin {})\n", r.selected_plugin);
    out += DevicesToText(r.devices);
  }
  for (const auto& [name, other] : r.other_devices) {
    out += fmt::format("\nDevices (plugin {}, not selected; --platform {} uses them)\n", name,
                       name);
    out += other.error.empty() ? DevicesToText(other.devices)
                               : fmt::format("  (could not list: {})\n", other.error);
  }

  if (!r.copies.empty() || !r.op_checks.empty()) {
    out += "\nSmoke tests\n";
    for (const auto& c : r.copies) {
      if (c.ok) {
        out += fmt::format(
            "  ok    copy {:<10} {} MiB: H2D {:.2f} GB/s, D2H {:.2f} GB/s\n",
            c.device, c.bytes >> 20, c.h2d_gbps, c.d2h_gbps);
      } else {
        out += fmt::format("  FAIL  copy {:<10} {}\n", c.device, c.error);
      }
    }
    for (const auto& o : r.op_checks) {
      out += fmt::format(
          "  {:<5} op   {:<10} {:<9} {}\n", o.ok ? "ok" : "FAIL", o.op, o.route,
          o.ok ? fmt::format("max abs error {:.2g}", o.max_abs_error)
               : o.error);
    }
    out += fmt::format("  {:<5} all-reduce {}\n",
                       r.all_reduce.status == "passed"   ? "ok"
                       : r.all_reduce.status == "failed" ? "FAIL"
                                                         : "-",
                       r.all_reduce.status == "skipped"
                           ? "skipped: " + r.all_reduce.detail
                           : r.all_reduce.detail);
  }

  const QuickConformance& q = r.conformance;
  if (q.status != "skipped" || !q.detail.empty()) {
    out += "\nConformance (quick subset of `tessera plugin-check`)\n";
    if (q.status == "skipped") {
      out += fmt::format("  -     skipped: {}\n", q.detail);
    } else {
      out += fmt::format("  {:<5} {} passed, {} failed, {} skipped ({:.1f} s){}\n",
                         q.status == "passed" ? "ok" : "FAIL", q.passed,
                         q.failed, q.skipped, q.seconds,
                         q.detail.empty() ? "" : ": " + q.detail);
      for (const auto& [check, message] : q.failures) {
        out += fmt::format("  FAIL  {}: {}\n", check, message);
      }
    }
  }

  auto selected = r.coverage.find(r.selected_plugin);
  if (selected != r.coverage.end()) {
    out += fmt::format("\nOp coverage (plugin {}; fallback: {})\n",
                       r.selected_plugin, r.fallback_plugin);
    std::vector<tsr_op_id> ops = runtime::AllOpsV1();
    ops.insert(ops.end(), runtime::FusedOps().begin(), runtime::FusedOps().end());
    for (tsr_op_id op : ops) {
      std::string name = runtime::OpName(op);
      auto it = selected->second.find(name);
      if (it == selected->second.end()) continue;
      bool disabled = std::find(r.disabled_ops.begin(), r.disabled_ops.end(),
                                name) != r.disabled_ops.end();
      out += fmt::format("  {:<16} {}{}\n", name, it->second,
                         disabled ? " (disabled by TESSERA_DISABLE_OPS)" : "");
    }
  }

  if (r.ok()) {
    out += fmt::format("\nResult: OK ({:.0f} ms)\n", r.elapsed_ms);
  } else {
    out += fmt::format("\nResult: {} (exit {})\nerror: {}\n",
                       r.exit_code == 1 ? "a check FAILED" : "NOT USABLE",
                       r.exit_code, r.error);
    if (!r.hint.empty()) out += fmt::format("what to do: {}\n", r.hint);
  }
  return out;
}

}  // namespace tessera::cli
