#include "runtime/runtime_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "base/env.h"
#include "base/logging.h"
#include "runtime/op_names.h"

namespace tessera::runtime {
namespace {

namespace fs = std::filesystem;

constexpr int32_t kMaxCpuDevices = 1024;

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// An env var that is set to a non-empty (after trimming) value.
std::optional<std::string> NonEmptyEnv(const char* name) {
  auto value = GetEnv(name);
  if (!value) return std::nullopt;
  std::string trimmed = Trim(*value);
  if (trimmed.empty()) return std::nullopt;
  return trimmed;
}

}  // namespace

StatusOr<std::vector<int32_t>> ParseVisibleDevices(const std::string& text) {
  std::vector<int32_t> indices;
  for (const std::string& item : SplitList(text, ',')) {
    char* end = nullptr;
    errno = 0;
    long long value = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || value < 0 || value > INT32_MAX ||
        !std::isdigit(static_cast<unsigned char>(item[0]))) {
      return InvalidArgumentError(fmt::format(
          "TESSERA_VISIBLE_DEVICES='{}': '{}' is not a device index; list "
          "physical device indices separated by commas (e.g. 0,2), leave it "
          "empty to hide every device, or unset it to use all",
          text, item));
    }
    if (std::find(indices.begin(), indices.end(), value) != indices.end()) {
      return InvalidArgumentError(fmt::format(
          "TESSERA_VISIBLE_DEVICES='{}' lists device {} twice; list each "
          "physical index once",
          text, value));
    }
    indices.push_back(static_cast<int32_t>(value));
  }
  return indices;
}

namespace {

// Splits `text` at each `sep` no backslash escapes, into at most
// `max_pieces` pieces (the last takes the rest); pieces keep their escapes.
std::vector<std::string> SplitUnescaped(const std::string& text, char sep,
                                        size_t max_pieces) {
  std::vector<std::string> pieces(1);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == sep && pieces.size() < max_pieces) {
      pieces.emplace_back();
      continue;
    }
    pieces.back() += text[i];
    if (text[i] == '\\' && i + 1 < text.size()) pieces.back() += text[++i];
  }
  return pieces;
}

// Drops each escaping backslash: "a\,b" -> "a,b", "a\\b" -> "a\b".
std::string Unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out += text[i];
  }
  return out;
}

}  // namespace

StatusOr<std::vector<PluginOption>> ParsePluginOptions(
    const std::string& text, const std::string& source) {
  std::vector<PluginOption> options;
  for (const std::string& raw : SplitUnescaped(text, ',', std::string::npos)) {
    const std::string item = Trim(raw);
    if (item.empty()) continue;  // "a=1,,b=2" and a trailing ','
    const std::vector<std::string> kv = SplitUnescaped(item, '=', 2);
    const std::string key = Trim(Unescape(kv[0]));
    if (kv.size() < 2 || key.empty()) {
      return InvalidArgumentError(
          fmt::format("{}='{}': '{}' is not key=value; write options as "
                      "key=value,key=value (e.g. threads=4; a backslash "
                      "escapes a ',' or '=' inside a value)",
                      source, text, item));
    }
    for (const auto& o : options) {
      if (o.key == key) {
        return InvalidArgumentError(
            fmt::format("{}='{}' sets '{}' twice; give each option once",
                        source, text, key));
      }
    }
    options.push_back({key, Trim(Unescape(kv[1])), source});
  }
  return options;
}

std::string FormatPluginOptions(const std::vector<PluginOption>& options) {
  auto escape = [](const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == ',' || c == '=' || c == '\\') out += '\\';
      out += c;
    }
    return out;
  };
  std::string out;
  for (const PluginOption& o : options) {
    if (!out.empty()) out += ',';
    out += escape(o.key) + "=" + escape(o.value);
  }
  return out;
}

StatusOr<bool> ParseBoolSetting(const std::string& text,
                                const std::string& source) {
  std::string v = Trim(text);
  std::transform(v.begin(), v.end(), v.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") {
    return false;
  }
  return InvalidArgumentError(
      fmt::format("{}='{}' is not a boolean; use 1 or 0", source, text));
}

std::string DefaultLibDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return "";
  return (exe.parent_path().parent_path() / "lib").lexically_normal().string();
}

void RuntimeConfig::SetLibDir(const std::string& dir) {
  // The previous lib dir's two folders go; TESSERA_PLUGIN_PATH's stay first.
  const std::string old_installed = InstalledPluginDir(lib_dir);
  std::erase_if(plugin_dirs, [&](const std::string& d) {
    return !lib_dir.empty() && (d == lib_dir || d == old_installed);
  });
  const std::string installed = InstalledPluginDir(dir);
  plugin_dirs.push_back(installed);
  plugin_dirs.push_back(dir);
  lib_dir = dir;
  // An installed tree keeps the cpu plugin with the others; a build tree
  // keeps it in the lib dir itself.
  std::error_code ec;
  const fs::path installed_cpu = fs::path(installed) / kCpuPluginFileName;
  cpu_plugin_path = fs::exists(installed_cpu, ec)
                        ? installed_cpu.string()
                        : (fs::path(dir) / kCpuPluginFileName).string();
}

std::string InstalledPluginDir(const std::string& lib_dir) {
  return (fs::path(lib_dir) / "tessera" / "plugins").string();
}

void RuntimeConfig::AddPluginOption(std::string key, std::string value,
                                    std::string source) {
  plugin_options.push_back(
      {std::move(key), std::move(value), std::move(source)});
}

void RuntimeConfig::AddCpuPluginOption(std::string key, std::string value,
                                       std::string source) {
  cpu_plugin_options.push_back(
      {std::move(key), std::move(value), std::move(source)});
}

StatusOr<RuntimeConfig> RuntimeConfig::FromEnvironment(
    const RuntimeFlags& flags) {
  RuntimeConfig config;

  // Plugin choice: flags beat variables; a path beats a platform name.
  if (!flags.device_plugin.empty() && !flags.platform.empty()) {
    return InvalidArgumentError(fmt::format(
        "both --device-plugin {} and --platform {} were given; give one of "
        "them",
        flags.device_plugin, flags.platform));
  }
  auto env_plugin = NonEmptyEnv("TESSERA_DEVICE_PLUGIN");
  auto env_platform = NonEmptyEnv("TESSERA_PLATFORM");
  if (!flags.device_plugin.empty()) {
    config.device_plugin_path = flags.device_plugin;
    config.selection_source = "--device-plugin";
  } else if (!flags.platform.empty()) {
    config.platform = flags.platform;
    config.selection_source = "--platform";
  } else if (env_plugin) {
    config.device_plugin_path = *env_plugin;
    config.selection_source = "TESSERA_DEVICE_PLUGIN";
    if (env_platform) {
      TSR_LOG_WARN(
          "both TESSERA_DEVICE_PLUGIN={} and TESSERA_PLATFORM={} are set; "
          "using TESSERA_DEVICE_PLUGIN",
          *env_plugin, *env_platform);
    }
  } else if (env_platform) {
    config.platform = *env_platform;
    config.selection_source = "TESSERA_PLATFORM";
  }

  if (auto path = GetEnv("TESSERA_PLUGIN_PATH")) {
    for (const std::string& dir : SplitList(*path, ':')) {
      config.plugin_dirs.push_back(dir);
    }
  }
  config.SetLibDir(DefaultLibDir());

  if (auto visible = GetEnv("TESSERA_VISIBLE_DEVICES")) {
    TSR_ASSIGN_OR_RETURN(auto indices, ParseVisibleDevices(*visible));
    config.visible_devices = std::move(indices);
  }

  if (auto cpu = GetEnv("TESSERA_CPU_DEVICES")) {
    auto parsed = GetEnvInt("TESSERA_CPU_DEVICES");
    if (!parsed.ok() || !parsed->has_value() || **parsed < 1 ||
        **parsed > kMaxCpuDevices) {
      return InvalidArgumentError(fmt::format(
          "TESSERA_CPU_DEVICES='{}' is not a device count; set it to a "
          "number from 1 to {} (to hide devices use TESSERA_VISIBLE_DEVICES)",
          *cpu, kMaxCpuDevices));
    }
    config.cpu_devices = static_cast<int32_t>(**parsed);
  }

  if (auto cpusets = GetEnv("TESSERA_CPU_CPUSETS")) config.cpu_cpusets = *cpusets;

  if (auto options = GetEnv("TESSERA_PLUGIN_OPTIONS")) {
    TSR_ASSIGN_OR_RETURN(
        config.plugin_options,
        ParsePluginOptions(*options, "TESSERA_PLUGIN_OPTIONS"));
  }
  for (const auto& o : flags.plugin_options) config.plugin_options.push_back(o);
  config.cpu_plugin_options = flags.cpu_plugin_options;

  if (auto disabled = GetEnv("TESSERA_DISABLE_OPS")) {
    TSR_ASSIGN_OR_RETURN(config.disabled_ops,
                         ParseOpNameList(*disabled, "TESSERA_DISABLE_OPS"));
  }
  if (auto log_ops = GetEnv("TESSERA_LOG_OPS")) {
    TSR_ASSIGN_OR_RETURN(config.log_ops,
                         ParseBoolSetting(*log_ops, "TESSERA_LOG_OPS"));
  }
  return config;
}

}  // namespace tessera::runtime
