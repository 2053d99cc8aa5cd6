#include "options.h"

#include <cstdio>
#include <string>
#include <vector>

#include "kit/init_args.h"

namespace tessera::cpu {
namespace {

constexpr const char* kKnownKeys =
    "threads, devices, isa, bf16_gemm, comm_timeout_ms, cpusets, fabric_rings, huge_pages";

// "0-3,8" -> {0, 1, 2, 3, 8} (CPUs, or device indices for fabric_rings);
// '+' separates items too ("0+4+8"), for TESSERA_PLUGIN_OPTIONS, whose
// options are comma-separated.
Status ParseCpuList(const std::string& text, std::vector<int>* out) {
  out->clear();
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find_first_of(",+", at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    int lo = -1, hi = -1;
    char dash = 0;
    const int got = std::sscanf(item.c_str(), "%d%c%d", &lo, &dash, &hi);
    if (got == 1) hi = lo;
    if (!(got == 1 || (got == 3 && dash == '-')) || lo < 0 || hi < lo || hi >= 1024) {
      return InvalidArgument("cpusets: '", item, "' is not a CPU or a range like 0-3 (CPUs 0..1023)");
    }
    for (int c = lo; c <= hi; ++c) out->push_back(c);
    at = end + 1;
  }
  return OkStatus();
}

}  // namespace

Status ParseOptions(const tsr_init_args* args, int default_threads, Options* out) {
  Options options;
  options.threads = default_threads;
  plugin_kit::InitArgs init;
  TSR_CPU_RETURN_IF_ERROR(plugin_kit::ReadInitArgs(args, &init));
  for (const auto& [key, value] : init.options) {
    if (key == "threads") {
      TSR_CPU_RETURN_IF_ERROR(plugin_kit::ParseIntOption(key, value, 1, 1024, &options.threads));
      options.threads_given = true;
    } else if (key == "cpusets" || key == "fabric_rings") {
      auto& lists = key == "cpusets" ? options.cpusets : options.fabric_rings;
      lists.clear();
      size_t at = 0;
      while (at <= value.size()) {
        size_t end = value.find(';', at);
        if (end == std::string::npos) end = value.size();
        std::vector<int> items;
        TSR_CPU_RETURN_IF_ERROR(ParseCpuList(value.substr(at, end - at), &items));
        lists.push_back(std::move(items));
        at = end + 1;
      }
    } else if (key == "devices") {
      TSR_CPU_RETURN_IF_ERROR(plugin_kit::ParseIntOption(key, value, 1, 64, &options.devices));
    } else if (key == "comm_timeout_ms") {
      TSR_CPU_RETURN_IF_ERROR(
          plugin_kit::ParseIntOption(key, value, 1, 86400000, &options.comm_timeout_ms));
    } else if (key == "huge_pages") {
      int on = 0;
      TSR_CPU_RETURN_IF_ERROR(plugin_kit::ParseIntOption(key, value, 0, 1, &on));
      options.huge_pages = on != 0;
    } else if (key == "isa") {
      options.isa = value;
    } else if (key == "bf16_gemm") {
      options.bf16_gemm = value;
    } else {
      return InvalidArgument("unknown option '", key, "'; the cpu plugin knows: ", kKnownKeys);
    }
  }
  if (!options.cpusets.empty() &&
      static_cast<int>(options.cpusets.size()) != options.devices) {
    return InvalidArgument("cpusets lists ", options.cpusets.size(), " CPU set(s) for ",
                           options.devices,
                           " virtual device(s); give one per device, separated by ';'");
  }
  options.visible = plugin_kit::VisibleDevices(init, options.devices);
  *out = std::move(options);
  return OkStatus();
}

}  // namespace tessera::cpu
