// Runtime: the selected device plugin, the cpu fallback plugin, their
// devices and the op dispatcher — the one object the engine starts from.
//
// Create() discovers plugins (plugin_discovery.h), selects one by
// RuntimeConfig's rules (an explicit path, then a platform name, else the
// highest probe score), initialises it with its options and visible-device
// filter, always loads the cpu plugin for fallback (sharing it when it is
// the selected one), opens every device of the selected plugin and builds
// the OpDispatcher. A plugin asked for by path or name that is rejected, has
// no hardware or fails init is an error, never a silent switch; choosing by
// score moves on to the next candidate when one fails init (recorded as
// rejected). Every candidate's record is available for `doctor`, also when
// Create fails.
//
// A selected plugin may expose no device (TESSERA_VISIBLE_DEVICES= hides
// all): Create still succeeds so doctor can report; CheckUsable() says why
// the runtime cannot serve.
//
// Ownership: the Runtime owns plugins, devices and dispatcher; everything
// handed out (Device&, Plugin&) is borrowed. Destruction order: dispatcher,
// devices, plugins. Thread-safety: the accessors are const after Create;
// the objects they return document their own rules.
#ifndef TESSERA_RUNTIME_RUNTIME_H_
#define TESSERA_RUNTIME_RUNTIME_H_

#include <memory>
#include <vector>

#include "base/status.h"
#include "runtime/device.h"
#include "runtime/op_dispatcher.h"
#include "runtime/plugin.h"
#include "runtime/plugin_discovery.h"
#include "runtime/runtime_config.h"

namespace tessera::runtime {

class Runtime {
 public:
  // Discovers, selects and initialises. `candidates_out`, when given, gets
  // every candidate's record even if Create fails.
  static StatusOr<std::unique_ptr<Runtime>> Create(
      const RuntimeConfig& config,
      std::vector<PluginCandidate>* candidates_out = nullptr);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const RuntimeConfig& config() const { return config_; }
  const std::vector<PluginCandidate>& candidates() const { return candidates_; }

  Plugin& plugin() const { return *selected_; }  // the selected plugin
  Plugin& cpu_plugin() const { return *cpu_; }   // the fallback plugin
  bool cpu_is_selected() const { return selected_ == cpu_; }

  // The selected plugin's devices, by ordinal.
  int num_devices() const { return static_cast<int>(devices_.size()); }
  Device& device(int ordinal) const { return *devices_.at(ordinal); }
  const std::vector<DevicePtr>& devices() const { return devices_; }

  OpDispatcher& dispatcher() const { return *dispatcher_; }

  // OK when the selected plugin has at least one device; otherwise
  // FailedPrecondition saying why and what to do.
  Status CheckUsable() const;

 private:
  explicit Runtime(RuntimeConfig config) : config_(std::move(config)) {}
  Status Build(std::vector<LoadedCandidate> loaded);

  RuntimeConfig config_;
  std::vector<PluginCandidate> candidates_;
  // Members below are destroyed bottom-up: dispatcher, devices, plugins.
  std::vector<std::unique_ptr<Plugin>> owned_plugins_;
  Plugin* selected_ = nullptr;
  Plugin* cpu_ = nullptr;
  std::vector<DevicePtr> devices_;
  DevicePtr fallback_device_;  // cpu device 0 when cpu is not selected
  std::unique_ptr<OpDispatcher> dispatcher_;
};

// Merges the init options a plugin receives; a key given by two sources is
// an InvalidArgument error naming both.
StatusOr<std::vector<PluginOption>> MergePluginOptions(
    const std::vector<PluginOption>& a, const std::vector<PluginOption>& b);

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_RUNTIME_H_
