#include "options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace tessera::cpu {
namespace {

constexpr const char* kKnownKeys = "threads, devices, isa";

Status ParseInt(const char* key, const char* value, int lo, int hi, int* out) {
  std::string text = value;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  bool bad = text.empty() || end == nullptr || *end != '\0' || errno != 0 ||
             text.find_first_of(" \t+") != std::string::npos;
  if (bad || v < lo || v > hi) {
    return InvalidArgument("option ", key, "='", text, "' is not an integer in [", lo, ", ",
                           hi, "]; e.g. ", key, "=", lo == 1 && hi > 4 ? 4 : lo);
  }
  *out = static_cast<int>(v);
  return OkStatus();
}

}  // namespace

Status ParseOptions(const tsr_init_args* args, int default_threads, Options* out) {
  Options options;
  options.threads = default_threads;
  int num_visible = -1;
  const int32_t* visible = nullptr;
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
      std::string key = opt.key;
      if (key == "threads") {
        TSR_CPU_RETURN_IF_ERROR(ParseInt("threads", opt.value, 1, 1024, &options.threads));
      } else if (key == "devices") {
        TSR_CPU_RETURN_IF_ERROR(ParseInt("devices", opt.value, 1, 64, &options.devices));
      } else if (key == "isa") {
        options.isa = opt.value;
      } else {
        return InvalidArgument("unknown option '", key, "'; the cpu plugin knows: ", kKnownKeys);
      }
    }
    num_visible = args->num_visible_devices;
    visible = args->visible_devices;
    if (num_visible < -1) {
      return InvalidArgument("num_visible_devices ", num_visible,
                             " is invalid; use -1 for all devices or a count >= 0");
    }
    if (num_visible > 0 && visible == nullptr) {
      return InvalidArgument("num_visible_devices is ", num_visible,
                             " but visible_devices is NULL");
    }
  }
  if (num_visible == -1) {
    for (int i = 0; i < options.devices; ++i) options.visible.push_back(i);
  } else {
    for (int i = 0; i < num_visible; ++i) {
      int index = visible[i];
      if (index < 0 || index >= options.devices) continue;  // not ours: ignored
      if (std::find(options.visible.begin(), options.visible.end(), index) !=
          options.visible.end()) {
        continue;  // listed twice: exposed once
      }
      options.visible.push_back(index);
    }
  }
  *out = std::move(options);
  return OkStatus();
}

}  // namespace tessera::cpu
