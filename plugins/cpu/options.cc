#include "options.h"

#include <string>

#include "kit/init_args.h"

namespace tessera::cpu {
namespace {

constexpr const char* kKnownKeys = "threads, devices, isa, comm_timeout_ms";

}  // namespace

Status ParseOptions(const tsr_init_args* args, int default_threads, Options* out) {
  Options options;
  options.threads = default_threads;
  plugin_kit::InitArgs init;
  TSR_CPU_RETURN_IF_ERROR(plugin_kit::ReadInitArgs(args, &init));
  for (const auto& [key, value] : init.options) {
    if (key == "threads") {
      TSR_CPU_RETURN_IF_ERROR(plugin_kit::ParseIntOption(key, value, 1, 1024, &options.threads));
    } else if (key == "devices") {
      TSR_CPU_RETURN_IF_ERROR(plugin_kit::ParseIntOption(key, value, 1, 64, &options.devices));
    } else if (key == "comm_timeout_ms") {
      TSR_CPU_RETURN_IF_ERROR(
          plugin_kit::ParseIntOption(key, value, 1, 86400000, &options.comm_timeout_ms));
    } else if (key == "isa") {
      options.isa = value;
    } else {
      return InvalidArgument("unknown option '", key, "'; the cpu plugin knows: ", kKnownKeys);
    }
  }
  options.visible = plugin_kit::VisibleDevices(init, options.devices);
  *out = std::move(options);
  return OkStatus();
}

}  // namespace tessera::cpu
