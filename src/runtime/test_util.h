// Helpers shared by the runtime unit tests (not part of tessera_runtime).
//
// ScopedCleanEnv unsets every TESSERA_* variable the runtime reads for the
// test's duration and restores them afterwards, so tests see only what they
// set. MinimalPluginPath()/CpuPluginPath() locate the real plugins the build
// produced. Not thread-safe (setenv).
#ifndef TESSERA_RUNTIME_TEST_UTIL_H_
#define TESSERA_RUNTIME_TEST_UTIL_H_

#include <spdlog/sinks/ostream_sink.h>

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "base/logging.h"

namespace tessera::runtime::testing {

inline constexpr const char* kRuntimeVariables[] = {
    "TESSERA_DEVICE_PLUGIN",   "TESSERA_PLATFORM",    "TESSERA_PLUGIN_PATH",
    "TESSERA_VISIBLE_DEVICES", "TESSERA_CPU_DEVICES", "TESSERA_PLUGIN_OPTIONS",
    "TESSERA_DISABLE_OPS",     "TESSERA_LOG_OPS",
};

class ScopedCleanEnv {
 public:
  ScopedCleanEnv() {
    for (const char* name : kRuntimeVariables) {
      const char* value = std::getenv(name);
      if (value != nullptr) saved_[name] = value;
      unsetenv(name);
    }
  }
  ~ScopedCleanEnv() {
    for (const char* name : kRuntimeVariables) {
      auto it = saved_.find(name);
      if (it == saved_.end()) {
        unsetenv(name);
      } else {
        setenv(name, it->second.c_str(), 1);
      }
    }
  }
  void Set(const char* name, const std::string& value) {
    setenv(name, value.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

// Captures Tessera's log lines (at `level` and above) for one scope.
class LogCapture {
 public:
  explicit LogCapture(spdlog::level::level_enum level = spdlog::level::info)
      : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)),
        old_level_(Logger().level()) {
    sink_->set_level(level);
    Logger().sinks().push_back(sink_);
    if (level < old_level_) Logger().set_level(level);
  }
  ~LogCapture() {
    auto& sinks = Logger().sinks();
    for (auto it = sinks.begin(); it != sinks.end(); ++it) {
      if (*it == sink_) {
        sinks.erase(it);
        break;
      }
    }
    Logger().set_level(old_level_);
  }
  std::string text() const { return stream_.str(); }
  // Lines containing every one of `needles`.
  int CountLines(std::initializer_list<std::string> needles) const {
    std::istringstream in(stream_.str());
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      bool all = true;
      for (const auto& needle : needles) {
        if (line.find(needle) == std::string::npos) all = false;
      }
      if (all) ++n;
    }
    return n;
  }

 private:
  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
  spdlog::level::level_enum old_level_;
};

inline std::string MinimalPluginPath() { return TSR_MINIMAL_PLUGIN_PATH; }
inline std::string MinimalPluginDir() {
  return std::filesystem::path(MinimalPluginPath()).parent_path().string();
}
inline std::string BuildLibDir() { return TSR_BUILD_LIB_DIR; }
inline std::string CpuPluginPath() {
  return BuildLibDir() + "/libtessera_plugin_cpu.so";
}

}  // namespace tessera::runtime::testing

#endif  // TESSERA_RUNTIME_TEST_UTIL_H_
