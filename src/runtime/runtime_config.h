// RuntimeConfig: every run-time choice about plugins and devices, gathered
// from command-line flags and environment variables in one place.
//
// Precedence (a flag beats its variable):
//   --device-plugin PATH  >  --platform NAME  >  TESSERA_DEVICE_PLUGIN=PATH
//   >  TESSERA_PLATFORM=NAME  >  the highest probe score.
// Other variables:
//   TESSERA_PLUGIN_PATH=dir:dir   extra folders searched for
//                                 libtessera_plugin_*.so (before the
//                                 default folders)
// Default folders, after those: <lib>/tessera/plugins (where `cmake
// --install` puts plugins, and where vendors install theirs), then <lib>
// itself (the build tree's plugins), <lib> being <dir of the binary>/../lib.
//   TESSERA_VISIBLE_DEVICES=0,2   physical indices the selected plugin
//                                 exposes (set but empty: none)
//   TESSERA_CPU_DEVICES=N         the cpu plugin's init option devices=N
//   TESSERA_PLUGIN_OPTIONS=k=v,.. init options of the selected plugin
//   TESSERA_DISABLE_OPS=a,b       ops hidden from the selected plugin (they
//                                 fall back to the cpu plugin)
//   TESSERA_LOG_OPS=1             log every op resolution
// Every invalid value is an InvalidArgument error naming the variable and
// saying what a valid value looks like. A plain value type.
#ifndef TESSERA_RUNTIME_RUNTIME_CONFIG_H_
#define TESSERA_RUNTIME_RUNTIME_CONFIG_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::runtime {

// One key=value init option and where it came from ("TESSERA_PLUGIN_OPTIONS",
// "--cpu-threads"), so a conflict or a rejection can name its origin.
struct PluginOption {
  std::string key;
  std::string value;
  std::string source;
};

// What the command line chose; empty strings mean "not given".
struct RuntimeFlags {
  std::string device_plugin;  // --device-plugin PATH
  std::string platform;       // --platform NAME
  // Init options from flags: for the selected plugin, and for the cpu plugin
  // (e.g. a --cpu-threads flag becomes {"threads", "8", "--cpu-threads"}).
  std::vector<PluginOption> plugin_options;
  std::vector<PluginOption> cpu_plugin_options;
};

struct RuntimeConfig {
  // At most one of these is set; both empty: choose by probe score.
  std::string device_plugin_path;
  std::string platform;
  // Where the choice came from, e.g. "--platform" or "TESSERA_DEVICE_PLUGIN";
  // empty when choosing by probe score.
  std::string selection_source;

  // Folders searched for libtessera_plugin_*.so, in order: the
  // TESSERA_PLUGIN_PATH entries, then InstalledPluginDir(lib_dir), then
  // lib_dir.
  std::vector<std::string> plugin_dirs;
  // The build/install lib dir: <dir of /proc/self/exe>/../lib.
  std::string lib_dir;
  // The cpu plugin, always loaded for op fallback: in
  // InstalledPluginDir(lib_dir) when it is there, else in lib_dir.
  std::string cpu_plugin_path;

  // nullopt: all devices; otherwise exactly these physical indices.
  std::optional<std::vector<int32_t>> visible_devices;
  // TESSERA_CPU_DEVICES; passed to the cpu plugin as devices=N.
  std::optional<int32_t> cpu_devices;
  // TESSERA_CPU_CPUSETS: the cpu plugin's `cpusets` option ("0-3;4-7":
  // virtual device i's threads on the CPUs of list i).
  std::optional<std::string> cpu_cpusets;
  // Init options for the selected plugin and for the cpu plugin. When the cpu
  // plugin is the selected one it receives both lists (a key in both is an
  // error).
  std::vector<PluginOption> plugin_options;
  std::vector<PluginOption> cpu_plugin_options;

  // Plugin files not to load, each with why (doctor's trial loads in a
  // child process found that it crashes): listed as rejected with that
  // reason instead.
  std::vector<std::pair<std::string, std::string>> excluded_plugins;

  std::set<tsr_op_id> disabled_ops;  // TESSERA_DISABLE_OPS
  bool log_ops = false;              // TESSERA_LOG_OPS

  // Reads the variables above, applies `flags` on top and fills the default
  // directories. Errors name the flag or variable at fault.
  static StatusOr<RuntimeConfig> FromEnvironment(
      const RuntimeFlags& flags = {});

  // Points lib_dir (and cpu_plugin_path, plugin_dirs' two default folders)
  // at `dir`.
  void SetLibDir(const std::string& dir);
  // Appends an init option for the selected plugin / the cpu plugin.
  void AddPluginOption(std::string key, std::string value, std::string source);
  void AddCpuPluginOption(std::string key, std::string value,
                          std::string source);
};

// "0,2" -> {0, 2}; "" -> {} (no device). Indices are non-negative integers,
// each listed once; otherwise an error naming TESSERA_VISIBLE_DEVICES.
StatusOr<std::vector<int32_t>> ParseVisibleDevices(const std::string& text);

// "threads=4,devices=2" -> options. Each item needs a non-empty key and '=';
// a key given twice is an error. A backslash makes the next character
// literal, so a value may hold ',' '=' or '\' ("cpusets=0-3\,8-11" is one
// option); spaces around keys and values are trimmed. `source` names the
// variable in messages.
StatusOr<std::vector<PluginOption>> ParsePluginOptions(
    const std::string& text, const std::string& source);
// The inverse: key=value,... with ',' '=' and '\' in keys and values
// escaped, so ParsePluginOptions gives `options` back.
std::string FormatPluginOptions(const std::vector<PluginOption>& options);

// Accepts 1/true/yes/on and 0/false/no/off/"" (case-insensitive).
StatusOr<bool> ParseBoolSetting(const std::string& text,
                                const std::string& source);

// <dir of /proc/self/exe>/../lib, normalised; "" if the executable's path is
// unknown.
std::string DefaultLibDir();

// The file name of the cpu plugin: "libtessera_plugin_cpu.so".
inline constexpr const char* kCpuPluginFileName = "libtessera_plugin_cpu.so";

// <lib_dir>/tessera/plugins: where an installed Tessera keeps its plugins.
std::string InstalledPluginDir(const std::string& lib_dir);

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_RUNTIME_CONFIG_H_
