#include "runtime/runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/logging.h"

namespace tessera::runtime {
namespace {

std::string JoinNames(const std::vector<LoadedCandidate>& loaded) {
  std::string out;
  for (const auto& c : loaded) {
    if (!out.empty()) out += ", ";
    out += c.record.name;
  }
  return out.empty() ? "none" : out;
}

std::string JoinDirs(const std::vector<std::string>& dirs) {
  std::string out;
  for (const auto& d : dirs) {
    if (!out.empty()) out += ":";
    out += d;
  }
  return out;
}

// How to undo a choice that failed, for error messages.
std::string UndoHint(const std::string& source) {
  if (source.rfind("--", 0) == 0) {
    return fmt::format("drop {} to choose a plugin automatically", source);
  }
  return fmt::format("unset {} to choose a plugin automatically", source);
}

}  // namespace

StatusOr<std::vector<PluginOption>> MergePluginOptions(
    const std::vector<PluginOption>& a, const std::vector<PluginOption>& b) {
  std::vector<PluginOption> out = a;
  for (const auto& o : b) {
    for (const auto& existing : out) {
      if (existing.key == o.key) {
        return InvalidArgumentError(fmt::format(
            "plugin option '{}' is set twice: {}={} (from {}) and {}={} (from "
            "{}); set it once",
            o.key, existing.key, existing.value, existing.source, o.key,
            o.value, o.source));
      }
    }
    out.push_back(o);
  }
  return out;
}

StatusOr<std::unique_ptr<Runtime>> Runtime::Create(
    const RuntimeConfig& config, std::vector<PluginCandidate>* candidates_out) {
  std::unique_ptr<Runtime> runtime(new Runtime(config));
  std::vector<std::string> explicit_paths;
  if (!config.device_plugin_path.empty()) {
    explicit_paths.push_back(config.device_plugin_path);
  }
  std::vector<std::string> files =
      FindPluginFiles(explicit_paths, config.plugin_dirs);
  if (!config.cpu_plugin_path.empty() &&
      std::none_of(files.begin(), files.end(), [&](const std::string& f) {
        return SamePluginFile(f, config.cpu_plugin_path);
      })) {
    files.push_back(config.cpu_plugin_path);
  }
  std::vector<LoadedCandidate> loaded;
  for (const auto& file : files) {
    auto excluded = std::find_if(
        config.excluded_plugins.begin(), config.excluded_plugins.end(),
        [&](const auto& e) { return SamePluginFile(e.first, file); });
    if (excluded == config.excluded_plugins.end()) {
      loaded.push_back(LoadCandidate(file));
      continue;
    }
    LoadedCandidate skipped;
    skipped.record.name = PluginNameFromPath(file);
    skipped.record.path = file;
    skipped.record.status = CandidateStatus::kRejected;
    skipped.record.reason = excluded->second;
    loaded.push_back(std::move(skipped));
  }

  Status status = runtime->Build(std::move(loaded));
  if (candidates_out != nullptr) *candidates_out = runtime->candidates_;
  if (!status.ok()) return status;
  return runtime;
}

Status Runtime::Build(std::vector<LoadedCandidate> loaded) {
  // Records are published on every exit path.
  struct Publish {
    std::vector<LoadedCandidate>& loaded;
    std::vector<PluginCandidate>& out;
    ~Publish() {
      out.clear();
      for (const auto& c : loaded) out.push_back(c.record);
    }
  } publish{loaded, candidates_};

  int cpu_index = -1;
  for (size_t i = 0; i < loaded.size(); ++i) {
    if (SamePluginFile(loaded[i].record.path, config_.cpu_plugin_path)) {
      cpu_index = static_cast<int>(i);
      break;
    }
  }
  std::vector<PluginOption> cpu_options;
  if (config_.cpu_devices) {
    cpu_options.push_back({"devices", std::to_string(*config_.cpu_devices),
                           "TESSERA_CPU_DEVICES"});
  }
  if (config_.cpu_cpusets) {
    cpu_options.push_back({"cpusets", *config_.cpu_cpusets, "TESSERA_CPU_CPUSETS"});
  }
  TSR_ASSIGN_OR_RETURN(
      cpu_options, MergePluginOptions(cpu_options, config_.cpu_plugin_options));

  auto init_args = [&](int index) -> StatusOr<PluginInitArgs> {
    PluginInitArgs args;
    args.visible_devices = config_.visible_devices;
    if (index == cpu_index) {
      TSR_ASSIGN_OR_RETURN(
          args.options,
          MergePluginOptions(config_.plugin_options, cpu_options));
    } else {
      args.options = config_.plugin_options;
    }
    return args;
  };
  auto usable = [&](int i) {
    return loaded[i].plugin != nullptr &&
           loaded[i].record.status == CandidateStatus::kAvailable;
  };

  // 1. Selection.
  const std::string& source = config_.selection_source;
  int selected = -1;
  std::string how;
  if (!config_.device_plugin_path.empty() || !config_.platform.empty()) {
    int index = -1;
    if (!config_.device_plugin_path.empty()) {
      index = 0;  // FindPluginFiles lists the explicit path first
      how = fmt::format("requested with {}", source);
    } else {
      for (size_t i = 0; i < loaded.size(); ++i) {
        if (loaded[i].record.name != config_.platform) continue;
        if (index < 0 || (!usable(index) && usable(static_cast<int>(i)))) {
          index = static_cast<int>(i);
        }
      }
      if (index < 0) {
        return NotFoundError(fmt::format(
            "no plugin named '{}' ({}={}); plugins found: {}; searched {} — "
            "install the plugin there or add its folder to "
            "TESSERA_PLUGIN_PATH, or {}",
            config_.platform, source, config_.platform, JoinNames(loaded),
            JoinDirs(config_.plugin_dirs), UndoHint(source)));
      }
      how = fmt::format("requested with {}={}", source, config_.platform);
    }
    const PluginCandidate& rec = loaded[index].record;
    if (rec.status == CandidateStatus::kRejected) {
      return FailedPreconditionError(
          fmt::format("the plugin requested with {} was rejected: {} ({})",
                      source, rec.reason, UndoHint(source)));
    }
    if (rec.status == CandidateStatus::kNoHardware) {
      return FailedPreconditionError(fmt::format(
          "the plugin requested with {} ({}) found no hardware: {} ({})",
          source, rec.path, rec.reason, UndoHint(source)));
    }
    TSR_ASSIGN_OR_RETURN(PluginInitArgs args, init_args(index));
    Status s = loaded[index].plugin->Init(args);
    if (!s.ok()) {
      loaded[index].record.status = CandidateStatus::kRejected;
      loaded[index].record.reason = fmt::format("init failed: {}", s.message());
      return FailedPreconditionError(fmt::format(
          "the plugin requested with {} ({}) failed to initialise: {} ({})",
          source, rec.path, s.message(), UndoHint(source)));
    }
    selected = index;
  } else {
    std::vector<int> order;
    for (size_t i = 0; i < loaded.size(); ++i) {
      if (usable(static_cast<int>(i))) order.push_back(static_cast<int>(i));
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return loaded[a].record.probe_score > loaded[b].record.probe_score;
    });
    std::string first_error;
    for (int index : order) {
      TSR_ASSIGN_OR_RETURN(PluginInitArgs args, init_args(index));
      Status s = loaded[index].plugin->Init(args);
      if (s.ok()) {
        selected = index;
        break;
      }
      loaded[index].record.status = CandidateStatus::kRejected;
      loaded[index].record.reason = fmt::format("init failed: {}", s.message());
      if (first_error.empty()) first_error = s.message();
      TSR_LOG_WARN("plugin {} failed to initialise: {}",
                   loaded[index].record.name, s.message());
    }
    if (selected < 0) {
      return FailedPreconditionError(fmt::format(
          "no usable device plugin: {}; searched {} (set TESSERA_PLUGIN_PATH "
          "to add folders){}",
          first_error.empty() ? "none loaded and probed successfully"
                              : first_error,
          JoinDirs(config_.plugin_dirs),
          first_error.empty()
              ? "; run `tessera doctor` for each plugin's reason"
              : ""));
    }
    how = fmt::format("highest probe score ({})",
                      loaded[selected].record.probe_score);
  }
  loaded[selected].record.status = CandidateStatus::kSelected;
  loaded[selected].record.reason = how;
  owned_plugins_.push_back(std::move(loaded[selected].plugin));
  selected_ = owned_plugins_.back().get();

  // 2. The cpu plugin, always there for op fallback.
  if (cpu_index == selected) {
    cpu_ = selected_;
    loaded[selected].record.fallback = true;
  } else {
    if (cpu_index < 0) {
      return FailedPreconditionError(fmt::format(
          "the cpu plugin {} is missing; Tessera needs it for op fallback — "
          "rebuild or reinstall Tessera",
          config_.cpu_plugin_path));
    }
    PluginCandidate& rec = loaded[cpu_index].record;
    if (loaded[cpu_index].plugin == nullptr ||
        rec.status != CandidateStatus::kAvailable) {
      return FailedPreconditionError(fmt::format(
          "the cpu plugin, needed for op fallback, is unusable: {}; rebuild "
          "or reinstall Tessera",
          rec.reason));
    }
    PluginInitArgs args;
    args.options = cpu_options;
    Status s = loaded[cpu_index].plugin->Init(args);
    if (!s.ok()) {
      rec.status = CandidateStatus::kRejected;
      rec.reason = fmt::format("init failed: {}", s.message());
      return FailedPreconditionError(fmt::format(
          "the cpu plugin, needed for op fallback, failed to initialise: {}",
          s.message()));
    }
    rec.fallback = true;
    rec.reason = "loaded for op fallback";
    owned_plugins_.push_back(std::move(loaded[cpu_index].plugin));
    cpu_ = owned_plugins_.back().get();
  }
  for (size_t i = 0; i < loaded.size(); ++i) {
    PluginCandidate& rec = loaded[i].record;
    if (rec.status != CandidateStatus::kAvailable || rec.fallback) continue;
    rec.reason = config_.selection_source.empty()
                     ? fmt::format("probe score {}, below {}'s {}",
                                   rec.probe_score, selected_->name(),
                                   loaded[selected].record.probe_score)
                     : fmt::format("not requested ({} chose {})",
                                   config_.selection_source, selected_->name());
  }
  // Unselected plugins are unloaded here.
  for (auto& c : loaded) c.plugin.reset();

  // 3. Devices and dispatch.
  TSR_ASSIGN_OR_RETURN(int32_t count, selected_->DeviceCount());
  for (int32_t i = 0; i < count; ++i) {
    TSR_ASSIGN_OR_RETURN(DevicePtr device, Device::Open(*selected_, i));
    devices_.push_back(std::move(device));
  }
  if (cpu_ != selected_) {
    TSR_ASSIGN_OR_RETURN(int32_t cpu_count, cpu_->DeviceCount());
    if (cpu_count > 0) {
      TSR_ASSIGN_OR_RETURN(fallback_device_, Device::Open(*cpu_, 0));
    } else {
      TSR_LOG_WARN("the cpu plugin exposes no device; op fallback is off");
    }
  }
  OpDispatcherOptions dispatch;
  dispatch.disabled_ops = config_.disabled_ops;
  dispatch.log_ops = config_.log_ops;
  dispatcher_ = std::make_unique<OpDispatcher>(
      *selected_, *cpu_, fallback_device_.get(), dispatch);
  TSR_LOG_DEBUG("device plugin {} selected ({}), {} device(s)",
                selected_->name(), how, count);
  return OkStatus();
}

Runtime::~Runtime() {
  dispatcher_.reset();
  devices_.clear();
  fallback_device_.reset();
  // Shut the cpu plugin down last when it is shared.
  while (!owned_plugins_.empty()) owned_plugins_.pop_back();
}

Status Runtime::CheckUsable() const {
  if (!devices_.empty()) return OkStatus();
  if (config_.visible_devices) {
    std::string listed;
    for (int32_t i : *config_.visible_devices) {
      listed += fmt::format("{}{}", listed.empty() ? "" : ",", i);
    }
    return FailedPreconditionError(fmt::format(
        "no usable device: plugin {} exposes no device because "
        "TESSERA_VISIBLE_DEVICES='{}' {}; unset TESSERA_VISIBLE_DEVICES or "
        "list indices of devices that exist",
        selected_->name(), listed,
        listed.empty() ? "hides every device" : "names none it has"));
  }
  std::string needs = selected_->Requirements();
  return FailedPreconditionError(fmt::format(
      "no usable device: plugin {} reports 0 devices{}; check the driver and "
      "hardware, or choose another plugin with --platform",
      selected_->name(),
      needs.empty() ? "" : fmt::format(" (it needs: {})", needs)));
}

}  // namespace tessera::runtime
