#include "runtime/stream.h"

#include <fmt/format.h>

#include "base/logging.h"

namespace tessera::runtime {
namespace {

Status SamePlugin(const Plugin& a, const Plugin& b, const char* what) {
  if (&a == &b) return OkStatus();
  return InvalidArgumentError(fmt::format(
      "{}: the buffer belongs to plugin {} but the stream to plugin {}; copy "
      "through host memory to move data between plugins",
      what, b.name(), a.name()));
}

}  // namespace

StatusOr<StreamPtr> Stream::Create(Plugin& plugin, int32_t device) {
  TSR_ASSIGN_OR_RETURN(tsr_stream handle, plugin.CreateStream(device));
  return StreamPtr(new Stream(&plugin, device, handle));
}

Stream::~Stream() {
  // The ABI's destroy waits for nothing: drain the queue first.
  Status s = plugin_->SynchronizeStream(handle_);
  if (!s.ok()) {
    TSR_LOG_WARN("stream on {} device {} ended with an error: {}",
                 plugin_->name(), device_, s.message());
  }
  s = plugin_->DestroyStream(handle_);
  if (!s.ok()) TSR_LOG_ERROR("destroying a stream: {}", s.message());
}

Status Stream::Synchronize() { return plugin_->SynchronizeStream(handle_); }

StatusOr<bool> Stream::IsIdle() { return plugin_->QueryStream(handle_); }

Status Stream::Wait(const Event& event) {
  return plugin_->StreamWaitEvent(handle_, event.handle());
}

Status Stream::CopyHostToDevice(Buffer& dst, uint64_t dst_offset,
                                const void* src, uint64_t bytes) {
  TSR_RETURN_IF_ERROR(SamePlugin(*plugin_, dst.plugin(), "copy to device"));
  TSR_RETURN_IF_ERROR(dst.CheckRange(dst_offset, bytes, "copy to device"));
  return plugin_->CopyHostToDevice(handle_, dst.handle(), dst_offset, src,
                                   bytes);
}

Status Stream::CopyDeviceToHost(void* dst, const Buffer& src,
                                uint64_t src_offset, uint64_t bytes) {
  TSR_RETURN_IF_ERROR(SamePlugin(*plugin_, src.plugin(), "copy to host"));
  TSR_RETURN_IF_ERROR(src.CheckRange(src_offset, bytes, "copy to host"));
  return plugin_->CopyDeviceToHost(handle_, dst, src.handle(), src_offset,
                                   bytes);
}

Status Stream::CopyDeviceToDevice(Buffer& dst, uint64_t dst_offset,
                                  const Buffer& src, uint64_t src_offset,
                                  uint64_t bytes) {
  TSR_RETURN_IF_ERROR(SamePlugin(*plugin_, dst.plugin(), "device copy"));
  TSR_RETURN_IF_ERROR(SamePlugin(*plugin_, src.plugin(), "device copy"));
  TSR_RETURN_IF_ERROR(dst.CheckRange(dst_offset, bytes, "device copy"));
  TSR_RETURN_IF_ERROR(src.CheckRange(src_offset, bytes, "device copy"));
  return plugin_->CopyDeviceToDevice(handle_, dst.handle(), dst_offset,
                                     src.handle(), src_offset, bytes);
}

Status Stream::Memset(Buffer& dst, uint64_t offset, uint8_t value,
                      uint64_t bytes) {
  TSR_RETURN_IF_ERROR(SamePlugin(*plugin_, dst.plugin(), "memset"));
  TSR_RETURN_IF_ERROR(dst.CheckRange(offset, bytes, "memset"));
  return plugin_->Memset(handle_, dst.handle(), offset, value, bytes);
}

StatusOr<EventPtr> Event::Create(Plugin& plugin, int32_t device) {
  TSR_ASSIGN_OR_RETURN(tsr_event handle, plugin.CreateEvent(device));
  return EventPtr(new Event(&plugin, device, handle));
}

Event::~Event() {
  // Destroy waits for nothing: let the captured work finish first. Its error
  // belongs to the stream and is reported there.
  (void)plugin_->SynchronizeEvent(handle_);
  Status s = plugin_->DestroyEvent(handle_);
  if (!s.ok()) TSR_LOG_ERROR("destroying an event: {}", s.message());
}

Status Event::Record(Stream& stream) {
  return plugin_->RecordEvent(handle_, stream.handle());
}

Status Event::Synchronize() { return plugin_->SynchronizeEvent(handle_); }

StatusOr<bool> Event::IsComplete() { return plugin_->QueryEvent(handle_); }

}  // namespace tessera::runtime
