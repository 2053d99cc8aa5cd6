#include "runtime/plugin_discovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "base/logging.h"

namespace tessera::runtime {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "libtessera_plugin_";
constexpr std::string_view kSuffix = ".so";

bool IsPluginFileName(const std::string& file) {
  return file.size() > kPrefix.size() + kSuffix.size() &&
         file.compare(0, kPrefix.size(), kPrefix) == 0 &&
         file.compare(file.size() - kSuffix.size(), kSuffix.size(), kSuffix) ==
             0;
}

// Doctor shows one line per reason; plugins may write several.
std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

std::string CanonicalKey(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? fs::path(path).lexically_normal().string() : canonical.string();
}

}  // namespace

std::string_view CandidateStatusName(CandidateStatus status) {
  switch (status) {
    case CandidateStatus::kSelected:
      return "selected";
    case CandidateStatus::kAvailable:
      return "available";
    case CandidateStatus::kRejected:
      return "rejected";
    case CandidateStatus::kNoHardware:
      return "no-hardware";
  }
  return "rejected";
}

std::string PluginNameFromPath(const std::string& path) {
  std::string file = fs::path(path).filename().string();
  if (IsPluginFileName(file)) {
    return file.substr(kPrefix.size(),
                       file.size() - kPrefix.size() - kSuffix.size());
  }
  return file;
}

bool SamePluginFile(const std::string& a, const std::string& b) {
  return CanonicalKey(a) == CanonicalKey(b);
}

std::vector<std::string> FindPluginFiles(
    const std::vector<std::string>& explicit_paths,
    const std::vector<std::string>& dirs) {
  std::vector<std::string> files;
  std::set<std::string> seen;
  auto add = [&](const std::string& path) {
    if (seen.insert(CanonicalKey(path)).second) files.push_back(path);
  };
  for (const auto& path : explicit_paths) add(path);
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (dir.empty() || !fs::is_directory(dir, ec)) {
      TSR_LOG_DEBUG("plugin folder {} does not exist; skipped", dir);
      continue;
    }
    std::vector<std::string> in_dir;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string file = entry.path().filename().string();
      if (IsPluginFileName(file)) in_dir.push_back(entry.path().string());
    }
    std::sort(in_dir.begin(), in_dir.end());
    for (const auto& path : in_dir) add(path);
  }
  return files;
}

namespace {

// Inspects (never initialises) what PluginLibrary::Open or FromTable gave.
LoadedCandidate InspectCandidate(
    LoadedCandidate out, StatusOr<std::unique_ptr<PluginLibrary>> library) {
  if (!library.ok()) {
    out.record.status = CandidateStatus::kRejected;
    out.record.reason = OneLine(library.status().message());
    return out;
  }
  auto plugin = std::make_unique<Plugin>(std::move(library).value());
  out.record.name = plugin->name();
  out.record.abi_version = plugin->AbiVersion();
  out.record.version = plugin->Version();
  out.record.description = plugin->Description();
  out.record.probe_score = plugin->Probe();
  if (out.record.probe_score <= 0) {
    out.record.status = CandidateStatus::kNoHardware;
    std::string why = OneLine(plugin->LastError());
    if (why.empty()) why = "probe found no supported hardware";
    std::string needs = plugin->Requirements();
    out.record.reason =
        needs.empty() ? why : fmt::format("{} (it needs: {})", why, needs);
    out.record.probe_score = 0;
  } else {
    out.record.status = CandidateStatus::kAvailable;
  }
  out.plugin = std::move(plugin);
  return out;
}

}  // namespace

LoadedCandidate LoadCandidate(const std::string& path) {
  LoadedCandidate out;
  out.record.path = path;
  out.record.name = PluginNameFromPath(path);
  auto library = PluginLibrary::Open(path, &out.record.abi_version);
  return InspectCandidate(std::move(out), std::move(library));
}

LoadedCandidate LoadCandidateFromTable(const tsr_plugin_api* api,
                                       const std::string& path) {
  LoadedCandidate out;
  out.record.path = path;
  out.record.name = PluginNameFromPath(path);
  auto library = PluginLibrary::FromTable(api, path, &out.record.abi_version);
  return InspectCandidate(std::move(out), std::move(library));
}

}  // namespace tessera::runtime
