// Plugin discovery: finding libtessera_plugin_*.so files, loading and
// probing each, and recording what happened to every one for `doctor`.
//
// Loading never initialises a plugin: it dlopens the file, validates the
// table (PluginLibrary::Open) and calls probe. A failure at any step makes a
// "rejected" record whose reason is the loader's one-line explanation
// (missing entry symbol, ABI mismatch with both versions, the unresolved
// library's name, ...); a probe score of 0 makes a "no-hardware" record.
// Selection (runtime.h) later marks one record "selected". Not thread-safe;
// used once at start-up.
#ifndef TESSERA_RUNTIME_PLUGIN_DISCOVERY_H_
#define TESSERA_RUNTIME_PLUGIN_DISCOVERY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/plugin.h"

namespace tessera::runtime {

enum class CandidateStatus { kSelected, kAvailable, kRejected, kNoHardware };
// "selected", "available", "rejected", "no-hardware".
std::string_view CandidateStatusName(CandidateStatus status);

// What doctor shows about one plugin file.
struct PluginCandidate {
  std::string name;  // manifest name, or derived from the file name
  std::string path;
  CandidateStatus status = CandidateStatus::kRejected;
  std::string reason;        // one line: why rejected / not selected / ...
  int32_t probe_score = -1;  // -1: never probed (rejected while loading)
  std::string abi_version;   // "1.0"; "" when the table was unreadable
  std::string version;       // the plugin's own version
  std::string description;
  bool fallback = false;  // loaded as the cpu plugin for op fallback
};

// A candidate and, when it loaded, its (uninitialised) Plugin.
struct LoadedCandidate {
  PluginCandidate record;
  std::unique_ptr<Plugin> plugin;  // nullptr when rejected
};

// The plugin name a file implies: libtessera_plugin_cpu.so -> "cpu"; other
// names -> the file name.
std::string PluginNameFromPath(const std::string& path);

// `explicit_paths` first (in order), then every libtessera_plugin_*.so in
// each of `dirs` (sorted by file name within a folder). Missing folders are
// skipped; a file reachable twice (symlinks, repeated folders) is listed once.
std::vector<std::string> FindPluginFiles(
    const std::vector<std::string>& explicit_paths,
    const std::vector<std::string>& dirs);

// Loads and probes one file. Never fails: problems become a rejected or
// no-hardware record.
LoadedCandidate LoadCandidate(const std::string& path);
// The same for a table already in the process (see PluginLibrary::FromTable);
// `path` names it in the record.
LoadedCandidate LoadCandidateFromTable(const tsr_plugin_api* api,
                                       const std::string& path);

// Whether two paths name the same file (after resolving symlinks).
bool SamePluginFile(const std::string& a, const std::string& b);

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_PLUGIN_DISCOVERY_H_
