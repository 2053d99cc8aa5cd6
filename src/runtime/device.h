// Device: one device of a plugin, with its properties and memory pools.
//
// A Device is the engine's handle on a chip: it creates streams and events,
// allocates Buffers (through a CachingAllocator per memory kind, so hot
// paths never call the plugin allocator; AllocateUncached for large
// long-lived buffers such as weights and KV slabs) and reports memory
// statistics. The ordinal is the plugin's device index after visible-device
// filtering; properties().physical_index is the index before it.
//
// Ownership: DevicePtr owns; Streams, Events and Buffers made here must die
// before the Device (the pools) and the Plugin. Thread-safety: all methods
// may be called from any thread (the pools lock internally).
#ifndef TESSERA_RUNTIME_DEVICE_H_
#define TESSERA_RUNTIME_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "runtime/buffer.h"
#include "runtime/caching_allocator.h"
#include "runtime/memory_stats.h"
#include "runtime/plugin.h"
#include "runtime/stream.h"

namespace tessera::runtime {

class Device {
 public:
  // Reads the properties of `ordinal` and sets up its pools.
  static StatusOr<std::unique_ptr<Device>> Open(Plugin& plugin,
                                                int32_t ordinal);
  ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  Plugin& plugin() const { return plugin_; }
  int32_t ordinal() const { return ordinal_; }
  const tsr_device_properties& properties() const { return properties_; }
  // "cpu:0".
  std::string Label() const;

  StatusOr<StreamPtr> CreateStream();
  StatusOr<EventPtr> CreateEvent();

  // A pooled buffer of `size` bytes. TSR_MEM_PINNED_HOST needs the plugin's
  // TSR_CAP_PINNED_HOST (otherwise Unimplemented).
  StatusOr<BufferPtr> Allocate(uint64_t size,
                               tsr_mem_kind kind = TSR_MEM_DEVICE);
  // A buffer straight from the plugin, freed straight back.
  StatusOr<BufferPtr> AllocateUncached(uint64_t size,
                                       tsr_mem_kind kind = TSR_MEM_DEVICE,
                                       uint64_t alignment = 0);

  CachingAllocator& allocator(tsr_mem_kind kind) {
    return kind == TSR_MEM_PINNED_HOST ? pinned_pool_ : device_pool_;
  }
  MemoryStats memory_stats(tsr_mem_kind kind = TSR_MEM_DEVICE) const {
    return plugin_.accounting().Get(ordinal_, kind);
  }
  // Returns the cached blocks of both pools to the plugin.
  Status Trim();

 private:
  Device(Plugin& plugin, int32_t ordinal, const tsr_device_properties& props);
  Status CheckKind(tsr_mem_kind kind) const;

  Plugin& plugin_;
  const int32_t ordinal_;
  const tsr_device_properties properties_;
  CachingAllocator device_pool_;
  CachingAllocator pinned_pool_;
};

using DevicePtr = std::unique_ptr<Device>;

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_DEVICE_H_
