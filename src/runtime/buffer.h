// Buffer: an owned region of device (or pinned host) memory of one plugin.
//
// A Buffer owns one plugin allocation and gives it back when it dies: to the
// CachingAllocator it came from (which keeps it for reuse) or straight to the
// plugin's buffer_free. Ownership is unique and shows in the type: BufferPtr
// (std::unique_ptr<Buffer>) owns, Buffer& borrows. A Buffer must be
// destroyed only after the work that uses it has finished (or, for pooled
// buffers, when later work on the same stream is the only possible user:
// stream order makes that reuse safe).
//
// size() is what the caller asked for; capacity() is the allocation's size
// (a pool's size class), which may be larger. Memory accounting records
// size() as "requested" bytes while the Buffer lives.
//
// Thread-safety: the object is immutable; copies into and out of it follow
// the plugin's threading rules (any thread, no concurrent writes).
#ifndef TESSERA_RUNTIME_BUFFER_H_
#define TESSERA_RUNTIME_BUFFER_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>

#include "base/status.h"
#include "runtime/plugin.h"
#include "runtime/tensor.h"

namespace tessera::runtime {

// Takes back a Buffer's allocation when the Buffer dies.
class BufferReleaser {
 public:
  virtual ~BufferReleaser() = default;
  virtual void Release(const RawAllocation& allocation) = 0;
};

class Buffer {
 public:
  // Takes ownership of `allocation` (made by `plugin`). `size` <=
  // allocation.size is the caller's size. `releaser` == nullptr: the
  // allocation goes back to the plugin directly.
  Buffer(Plugin* plugin, const RawAllocation& allocation, uint64_t size,
         BufferReleaser* releaser);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Plugin& plugin() const { return *plugin_; }
  tsr_buffer handle() const { return allocation_.handle; }
  int32_t device() const { return allocation_.device; }
  tsr_mem_kind kind() const { return allocation_.kind; }
  uint64_t size() const { return size_; }
  uint64_t capacity() const { return allocation_.size; }
  // The host address of byte 0, or nullptr when not host-visible.
  void* host_pointer() const { return allocation_.host_pointer; }

  // Synchronous copies: they return when the bytes have arrived and wait for
  // no stream. Offsets and sizes are in bytes and must stay within size().
  Status CopyFromHost(uint64_t offset, const void* src, uint64_t bytes);
  Status CopyToHost(void* dst, uint64_t offset, uint64_t bytes) const;
  Status Fill(uint8_t value);

  // A row-major contiguous tensor view of this buffer.
  tsr_tensor View(tsr_dtype dtype, std::span<const int64_t> shape,
                  uint64_t offset = 0) const {
    return MakeTensor(handle(), dtype, shape, offset);
  }
  tsr_tensor View(tsr_dtype dtype, std::initializer_list<int64_t> shape,
                  uint64_t offset = 0) const {
    return MakeTensor(handle(), dtype, shape, offset);
  }

  // OutOfRange unless [offset, offset + bytes) lies within size().
  Status CheckRange(uint64_t offset, uint64_t bytes, const char* what) const;

 private:
  Plugin* const plugin_;
  const RawAllocation allocation_;
  const uint64_t size_;
  BufferReleaser* const releaser_;
};

using BufferPtr = std::unique_ptr<Buffer>;

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_BUFFER_H_
