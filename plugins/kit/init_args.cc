#include "init_args.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace tessera::plugin_kit {

Status ReadInitArgs(const tsr_init_args* args, InitArgs* out) {
  InitArgs result;
  if (args != nullptr) {
    if (args->struct_size < sizeof(tsr_init_args)) {
      return InvalidArgument("tsr_init_args.struct_size ", args->struct_size,
                             " is smaller than the v1.0 struct (", sizeof(tsr_init_args),
                             " bytes); set struct_size = sizeof(tsr_init_args)");
    }
    if (args->num_options > 0 && args->options == nullptr) {
      return InvalidArgument("num_options is ", args->num_options, " but options is NULL");
    }
    for (size_t i = 0; i < args->num_options; ++i) {
      const tsr_option& opt = args->options[i];
      if (opt.key == nullptr || opt.value == nullptr) {
        return InvalidArgument("option ", i, " has a NULL key or value");
      }
      result.options.emplace_back(opt.key, opt.value);
    }
    result.num_visible = args->num_visible_devices;
    if (result.num_visible < -1) {
      return InvalidArgument("num_visible_devices ", result.num_visible,
                             " is invalid; use -1 for all devices or a count >= 0");
    }
    if (result.num_visible > 0 && args->visible_devices == nullptr) {
      return InvalidArgument("num_visible_devices is ", result.num_visible,
                             " but visible_devices is NULL");
    }
    for (int i = 0; i < result.num_visible; ++i) {
      result.visible.push_back(args->visible_devices[i]);
    }
  }
  *out = std::move(result);
  return OkStatus();
}

std::vector<int> VisibleDevices(const InitArgs& args, int num_physical) {
  std::vector<int> out;
  if (args.num_visible == -1) {
    for (int i = 0; i < num_physical; ++i) out.push_back(i);
    return out;
  }
  for (int index : args.visible) {
    if (index < 0 || index >= num_physical) continue;  // not ours: ignored
    if (std::find(out.begin(), out.end(), index) != out.end()) continue;  // listed twice
    out.push_back(index);
  }
  return out;
}

Status ParseIntOption(const std::string& key, const std::string& value, int lo, int hi,
                      int* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  bool bad = value.empty() || end == nullptr || *end != '\0' || errno != 0 ||
             value.find_first_of(" \t+") != std::string::npos;
  if (bad || v < lo || v > hi) {
    return InvalidArgument("option ", key, "='", value, "' is not an integer in [", lo, ", ",
                           hi, "]; e.g. ", key, "=", lo == 1 && hi > 4 ? 4 : lo);
  }
  *out = static_cast<int>(v);
  return OkStatus();
}

}  // namespace tessera::plugin_kit
