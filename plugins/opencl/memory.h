// Buffers of the OpenCL plugin.
//
// Device memory is a cl_mem in the device's context (not host-visible).
// Pinned host memory (TSR_MEM_PINNED_HOST) is a CL_MEM_ALLOC_HOST_PTR
// buffer mapped once for its whole life: host_pointer is the mapping, and
// copies and kernels use the cl_mem (on drivers where mapped host memory is
// the buffer itself, as PoCL and integrated GPUs, no copy happens). Every
// size is rounded up to the device's base-address alignment; reserved_size
// reports the rounded size, so buffer_info is honest about what is held.
// A size-0 buffer holds one alignment unit so it can have a cl_mem.
#ifndef TESSERA_PLUGINS_OPENCL_MEMORY_H_
#define TESSERA_PLUGINS_OPENCL_MEMORY_H_

#include <cstdint>
#include <memory>

#include "cl_headers.h"

namespace tessera::opencl {

class Device;

struct Buffer {
  Buffer() = default;
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Device* device = nullptr;
  tsr_mem_kind kind = TSR_MEM_DEVICE;
  uint64_t size = 0;           // bytes requested
  uint64_t reserved_size = 0;  // bytes of the cl_mem
  cl_mem mem = nullptr;
  void* host_pointer = nullptr;  // pinned only: the persistent mapping
};

// Allocates `size` bytes of `kind` on `device`; `alignment` (0 or a power
// of two) above the device's base-address alignment is refused, since
// device addresses cannot be placed.
Status AllocateBuffer(Device& device, tsr_mem_kind kind, uint64_t size, uint64_t alignment,
                      std::unique_ptr<Buffer>* out);

// Checks that [offset, offset + size) lies inside `buffer`.
Status CheckRange(const Buffer& buffer, uint64_t offset, uint64_t size, const char* what);

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_MEMORY_H_
