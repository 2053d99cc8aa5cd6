// PluginLibrary: one dlopen'ed device-plugin shared library whose table
// passed the ABI checks (rules of include/tessera/plugin/tessera_plugin.h).
//
// Open() never initialises the plugin; it only loads, finds the entry
// symbol, reads the table and checks versions, sizes and required entries.
// Every failure comes back as a Status whose message is one line a person
// can act on: file not found, the unresolved library a dlopen failure names,
// a missing entry symbol, an ABI major mismatch or a minor below the floor
// (both versions shown), a table too small, a required entry missing.
//
// Thread-safety: immutable after Open(); the table itself follows the ABI's
// threading rules. The library is dlclose'd when the object dies, so every
// handle obtained through api() must be released first.
#ifndef TESSERA_RUNTIME_PLUGIN_LIBRARY_H_
#define TESSERA_RUNTIME_PLUGIN_LIBRARY_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::runtime {

class PluginLibrary {
 public:
  // Loads `path` and validates its table. Never calls probe or init.
  // `abi_version_out`, when given, receives the "major.minor" the table
  // reports as soon as it could be read — also when Open then rejects it
  // (an ABI mismatch), so `doctor` can show it.
  static StatusOr<std::unique_ptr<PluginLibrary>> Open(
      const std::string& path, std::string* abi_version_out = nullptr);
  // The checks of Open() on a table already in hand (a plugin linked into
  // the process, or one a test or fuzzer builds); nothing is dlclose'd.
  // `path` only names the plugin in messages (its file name is the name
  // when the manifest has none). The table must outlive the library.
  static StatusOr<std::unique_ptr<PluginLibrary>> FromTable(
      const tsr_plugin_api* api, const std::string& path,
      std::string* abi_version_out = nullptr);

  ~PluginLibrary();
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;

  const tsr_plugin_api& api() const { return *api_; }
  const std::string& path() const { return path_; }
  // The manifest name ("cpu"), or the file name when the manifest has none.
  const std::string& name() const { return name_; }
  // "1.0"-style ABI version the plugin reports.
  std::string AbiVersion() const;

  // The message of the plugin's last failed call on this thread, for
  // wrapping a non-OK tsr_status into a Status.
  std::string LastError() const;
  // Converts a plugin status into a Status: OK stays OK; otherwise the
  // message is "<plugin> <what>: <last_error>".
  Status Check(tsr_status status, const char* what) const;

 private:
  PluginLibrary() = default;

  void* handle_ = nullptr;
  const tsr_plugin_api* api_ = nullptr;
  std::string path_;
  std::string name_;
};

// The host services table handed to every plugin: routes plugin log lines
// into Tessera's logger with the plugin prefix. Lives for the process.
const tsr_host_services* HostServices();

// A manifest name as the ABI spells it: 1-64 characters of [a-z0-9_]
// (PluginLibrary refuses others; plugin-check's abi.manifest checks it).
bool IsValidPluginName(const char* name);

// Text a plugin hands the host (manifest strings, last_error) made safe to
// log and print on one line: line breaks and tabs become spaces, other
// control characters '?', and at most
// `max_bytes` are kept ("..." marks a cut). NULL gives "".
std::string PluginText(const char* text, size_t max_bytes);

// Maps a plugin status code to a StatusCode.
StatusCode FromPluginStatus(tsr_status status);

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_PLUGIN_LIBRARY_H_
