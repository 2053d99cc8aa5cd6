#include "runtime/plugin_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstddef>
#include <filesystem>
#include <functional>
#include <regex>

#include "base/logging.h"

namespace tessera::runtime {
namespace {

void HostLog(void* /*context*/, tsr_log_level level, const char* message) {
  if (message == nullptr) return;
  switch (level) {
    case TSR_LOG_DEBUG: TSR_LOG_DEBUG("[plugin] {}", message); break;
    case TSR_LOG_INFO: TSR_LOG_INFO("[plugin] {}", message); break;
    case TSR_LOG_WARN: TSR_LOG_WARN("[plugin] {}", message); break;
    default: TSR_LOG_ERROR("[plugin] {}", message); break;
  }
}

// The smallest table a v1.0 plugin may return: everything up to `launch`.
constexpr size_t kMinTableSize =
    offsetof(tsr_plugin_api, launch) + sizeof(tsr_plugin_api::launch);

// Explains a dlopen failure. dlerror() reads like
//   "/p/x.so: libfoo.so.1: cannot open shared object file: No such file ..."
//   "/p/x.so: undefined symbol: bar"
std::string ExplainDlopenError(const std::string& path, const std::string& err) {
  static const std::regex kMissingLib(
      R"(([^\s:]+\.so[^\s:]*): cannot open shared object file)");
  static const std::regex kUndefined(R"(undefined symbol: (\S+))");
  std::smatch match;
  if (std::regex_search(err, match, kMissingLib) && match[1] != path) {
    return fmt::format(
        "cannot load plugin {}: it needs the shared library {}, which is not "
        "installed or not on the library path; install the package that "
        "provides {} or add its directory to LD_LIBRARY_PATH (dlopen: {})",
        path, match[1].str(), match[1].str(), err);
  }
  if (std::regex_search(err, match, kUndefined)) {
    return fmt::format(
        "cannot load plugin {}: undefined symbol {}; it was built against a "
        "different version of one of its libraries (dlopen: {})",
        path, match[1].str(), err);
  }
  return fmt::format("cannot load plugin {}: {}", path, err);
}


#define TSR_REQUIRED_ENTRIES(X)                                           \
  X(last_error) X(probe) X(init) X(shutdown) X(device_count)              \
  X(device_properties) X(buffer_alloc) X(buffer_free) X(buffer_info)      \
  X(stream_create) X(stream_destroy) X(stream_synchronize) X(stream_query) \
  X(event_create) X(event_destroy) X(event_record) X(stream_wait_event)   \
  X(event_synchronize) X(event_query) X(copy_host_to_device)              \
  X(copy_device_to_host) X(copy_device_to_device) X(memset) X(list_ops)   \
  X(resolve_op) X(launch)

}  // namespace

const tsr_host_services* HostServices() {
  static const tsr_host_services services = {
      sizeof(tsr_host_services), TSR_PLUGIN_ABI_MAJOR, TSR_PLUGIN_ABI_MINOR,
      nullptr, &HostLog};
  return &services;
}

StatusCode FromPluginStatus(tsr_status status) {
  switch (status) {
    case TSR_OK: return StatusCode::kOk;
    case TSR_ERR_INVALID_ARGUMENT: return StatusCode::kInvalidArgument;
    case TSR_ERR_INVALID_HANDLE: return StatusCode::kInvalidArgument;
    case TSR_ERR_OUT_OF_MEMORY: return StatusCode::kResourceExhausted;
    case TSR_ERR_UNSUPPORTED: return StatusCode::kUnimplemented;
    case TSR_ERR_NOT_FOUND: return StatusCode::kNotFound;
    case TSR_ERR_NOT_READY: return StatusCode::kUnavailable;
    case TSR_ERR_DEVICE: return StatusCode::kInternal;
    default: return StatusCode::kInternal;
  }
}

StatusOr<std::unique_ptr<PluginLibrary>> PluginLibrary::Open(
    const std::string& path, std::string* abi_version_out) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return NotFoundError(fmt::format(
        "plugin file {} not found; check the path given with --device-plugin "
        "or TESSERA_DEVICE_PLUGIN",
        path));
  }
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return FailedPreconditionError(
        ExplainDlopenError(path, err ? err : "unknown dlopen error"));
  }
  // Closed on every failure below; owned by the library once it is valid.
  std::unique_ptr<void, int (*)(void*)> closer(handle, dlclose);

  dlerror();
  void* entry = dlsym(handle, TSR_PLUGIN_ENTRY_SYMBOL);
  if (entry == nullptr) {
    return FailedPreconditionError(fmt::format(
        "plugin {} does not export the entry symbol {}; it is not a Tessera "
        "device plugin, or it was built without TSR_PLUGIN_EXPORT / "
        "extern \"C\"",
        path, TSR_PLUGIN_ENTRY_SYMBOL));
  }
  auto get_api = reinterpret_cast<tsr_get_plugin_api_fn>(entry);
  const tsr_plugin_api* api = get_api(HostServices());
  if (api == nullptr) {
    return FailedPreconditionError(fmt::format(
        "plugin {}: {} returned NULL; the plugin cannot run in this process "
        "(see its log lines above)",
        path, TSR_PLUGIN_ENTRY_SYMBOL));
  }
  TSR_ASSIGN_OR_RETURN(std::unique_ptr<PluginLibrary> lib,
                       FromTable(api, path, abi_version_out));
  lib->handle_ = closer.release();
  return lib;
}

StatusOr<std::unique_ptr<PluginLibrary>> PluginLibrary::FromTable(
    const tsr_plugin_api* api, const std::string& path,
    std::string* abi_version_out) {
  if (api == nullptr) {
    return FailedPreconditionError(
        fmt::format("plugin {}: no table (NULL)", path));
  }
  std::unique_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->path_ = path;
  lib->name_ = std::filesystem::path(path).filename().string();
  // The first three fields are the same in every major: safe to read.
  if (abi_version_out != nullptr) {
    *abi_version_out = fmt::format("{}.{}", api->abi_major, api->abi_minor);
  }
  if (api->abi_major != TSR_PLUGIN_ABI_MAJOR) {
    return FailedPreconditionError(fmt::format(
        "plugin {} was built for plugin ABI {}.{}, but this Tessera speaks "
        "ABI {}.{} (it accepts {}.{} and later {}.x); rebuild the plugin "
        "against this Tessera's tessera_plugin.h or use a matching Tessera",
        path, api->abi_major, api->abi_minor, TSR_PLUGIN_ABI_MAJOR,
        TSR_PLUGIN_ABI_MINOR, TSR_PLUGIN_ABI_MAJOR, TSR_PLUGIN_ABI_MINOR_FLOOR,
        TSR_PLUGIN_ABI_MAJOR));
  }
  // std::less: the floor may be 0, and `minor < 0u` would warn.
  if (std::less<uint32_t>()(api->abi_minor, TSR_PLUGIN_ABI_MINOR_FLOOR)) {
    return FailedPreconditionError(fmt::format(
        "plugin {} was built for plugin ABI {}.{}, older than the oldest this "
        "Tessera accepts ({}.{}); rebuild it against this Tessera's header",
        path, api->abi_major, api->abi_minor, TSR_PLUGIN_ABI_MAJOR,
        TSR_PLUGIN_ABI_MINOR_FLOOR));
  }
  if (api->struct_size < kMinTableSize) {
    return FailedPreconditionError(fmt::format(
        "plugin {} returned a table of {} bytes, smaller than the {} bytes "
        "every ABI {}.x table holds; it is corrupt or not built from "
        "tessera_plugin.h",
        path, api->struct_size, kMinTableSize, TSR_PLUGIN_ABI_MAJOR));
  }
  if (api->manifest == nullptr) {
    return FailedPreconditionError(
        fmt::format("plugin {} has no manifest (tsr_plugin_api.manifest is "
                    "NULL); every plugin must describe itself",
                    path));
  }
#define TSR_CHECK_ENTRY(field)                                               \
  if (api->field == nullptr) {                                               \
    return FailedPreconditionError(fmt::format(                              \
        "plugin {} leaves the required entry '{}' NULL; only entries marked " \
        "optional in tessera_plugin.h may be NULL",                          \
        path, #field));                                                      \
  }
  TSR_REQUIRED_ENTRIES(TSR_CHECK_ENTRY)
#undef TSR_CHECK_ENTRY
  // Every manifest field is v1.0's: a smaller manifest is not one.
  if (api->manifest->struct_size < sizeof(tsr_plugin_manifest)) {
    return FailedPreconditionError(fmt::format(
        "plugin {} has a manifest of {} bytes (struct_size), smaller than the "
        "{} bytes of every ABI {}.x manifest; it is corrupt or not built from "
        "tessera_plugin.h",
        path, api->manifest->struct_size, sizeof(tsr_plugin_manifest),
        TSR_PLUGIN_ABI_MAJOR));
  }
  if (api->manifest->name != nullptr && api->manifest->name[0] != '\0') {
    if (!IsValidPluginName(api->manifest->name)) {
      return FailedPreconditionError(fmt::format(
          "plugin {} names itself \"{}\" in its manifest; a plugin name is "
          "1-64 characters of [a-z0-9_]",
          path, PluginText(api->manifest->name, 64)));
    }
    lib->name_ = api->manifest->name;
  }
  lib->api_ = api;
  return lib;
}

PluginLibrary::~PluginLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string PluginLibrary::AbiVersion() const {
  return fmt::format("{}.{}", api_->abi_major, api_->abi_minor);
}

std::string PluginLibrary::LastError() const {
  return PluginText(api_->last_error(), 4096);
}

bool IsValidPluginName(const char* name) {
  if (name == nullptr || name[0] == '\0') return false;
  size_t n = 0;
  for (const char* c = name; *c != '\0'; ++c, ++n) {
    const bool ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_';
    if (!ok || n >= 64) return false;
  }
  return true;
}

std::string PluginText(const char* text, size_t max_bytes) {
  if (text == nullptr) return "";
  std::string out;
  for (const char* c = text; *c != '\0'; ++c) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const unsigned char u = static_cast<unsigned char>(*c);
    // Control characters would forge log lines or break one-line reports:
    // line breaks and tabs become spaces, the others '?'.
    if (u == '\n' || u == '\r' || u == '\t') {
      out += ' ';
    } else {
      out += (u < 0x20 || u == 0x7f) ? '?' : *c;
    }
  }
  return out;
}

Status PluginLibrary::Check(tsr_status status, const char* what) const {
  if (status == TSR_OK) return OkStatus();
  std::string message = LastError();
  if (message.empty()) message = fmt::format("status {}", status);
  // Plugins often name the entry themselves ("init: unknown option ...");
  // say it once.
  const std::string prefix = fmt::format("{}: ", what);
  if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
  return Status(FromPluginStatus(status),
                fmt::format("{} plugin: {}: {}", name_, what, message));
}

}  // namespace tessera::runtime
