#include "runtime/buffer.h"

#include <fmt/format.h>

#include "base/logging.h"

namespace tessera::runtime {

Buffer::Buffer(Plugin* plugin, const RawAllocation& allocation, uint64_t size,
               BufferReleaser* releaser)
    : plugin_(plugin),
      allocation_(allocation),
      size_(size),
      releaser_(releaser) {
  plugin_->accounting().OnBufferCreated(allocation_.device, allocation_.kind,
                                        size_);
}

Buffer::~Buffer() {
  plugin_->accounting().OnBufferDestroyed(allocation_.device, allocation_.kind,
                                          size_);
  if (releaser_ != nullptr) {
    releaser_->Release(allocation_);
    return;
  }
  Status s = plugin_->Free(allocation_);
  if (!s.ok()) TSR_LOG_ERROR("freeing a buffer: {}", s.message());
}

Status Buffer::CheckRange(uint64_t offset, uint64_t bytes,
                          const char* what) const {
  if (offset > size_ || bytes > size_ - offset) {
    return OutOfRangeError(
        fmt::format("{}: bytes [{}, {}) are outside the {}-byte buffer", what,
                    offset, offset + bytes, size_));
  }
  return OkStatus();
}

Status Buffer::CopyFromHost(uint64_t offset, const void* src, uint64_t bytes) {
  TSR_RETURN_IF_ERROR(CheckRange(offset, bytes, "copy to device"));
  return plugin_->CopyHostToDevice(nullptr, handle(), offset, src, bytes);
}

Status Buffer::CopyToHost(void* dst, uint64_t offset, uint64_t bytes) const {
  TSR_RETURN_IF_ERROR(CheckRange(offset, bytes, "copy to host"));
  return plugin_->CopyDeviceToHost(nullptr, dst, handle(), offset, bytes);
}

Status Buffer::Fill(uint8_t value) {
  return plugin_->Memset(nullptr, handle(), 0, value, size_);
}

}  // namespace tessera::runtime
