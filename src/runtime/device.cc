#include "runtime/device.h"

#include <fmt/format.h>

namespace tessera::runtime {

StatusOr<DevicePtr> Device::Open(Plugin& plugin, int32_t ordinal) {
  TSR_ASSIGN_OR_RETURN(auto props, plugin.DeviceProperties(ordinal));
  return DevicePtr(new Device(plugin, ordinal, props));
}

Device::Device(Plugin& plugin, int32_t ordinal,
               const tsr_device_properties& props)
    : plugin_(plugin),
      ordinal_(ordinal),
      properties_(props),
      device_pool_(plugin, ordinal, TSR_MEM_DEVICE),
      pinned_pool_(plugin, ordinal, TSR_MEM_PINNED_HOST) {}

std::string Device::Label() const {
  return fmt::format("{}:{}", plugin_.name(), ordinal_);
}

StatusOr<StreamPtr> Device::CreateStream() {
  return Stream::Create(plugin_, ordinal_);
}

StatusOr<EventPtr> Device::CreateEvent() {
  return Event::Create(plugin_, ordinal_);
}

Status Device::CheckKind(tsr_mem_kind kind) const {
  if (kind == TSR_MEM_DEVICE) return OkStatus();
  if (kind == TSR_MEM_PINNED_HOST) {
    if (plugin_.SupportsPinnedHost()) return OkStatus();
    return UnimplementedError(
        fmt::format("{} plugin does not provide pinned host memory "
                    "(TSR_CAP_PINNED_HOST); use ordinary host memory",
                    plugin_.name()));
  }
  return InvalidArgumentError(fmt::format("unknown memory kind {}", kind));
}

StatusOr<BufferPtr> Device::Allocate(uint64_t size, tsr_mem_kind kind) {
  TSR_RETURN_IF_ERROR(CheckKind(kind));
  return allocator(kind).Allocate(size);
}

StatusOr<BufferPtr> Device::AllocateUncached(uint64_t size, tsr_mem_kind kind,
                                             uint64_t alignment) {
  TSR_RETURN_IF_ERROR(CheckKind(kind));
  TSR_ASSIGN_OR_RETURN(RawAllocation a,
                       plugin_.Allocate(ordinal_, kind, size, alignment));
  return std::make_unique<Buffer>(&plugin_, a, size, nullptr);
}

Status Device::Trim() {
  Status a = device_pool_.Trim();
  Status b = pinned_pool_.Trim();
  return a.ok() ? b : a;
}

}  // namespace tessera::runtime
