#include "memory.h"

#include "device.h"

namespace tessera::opencl {

Buffer::~Buffer() {
  if (mem == nullptr) return;
  if (host_pointer != nullptr && device != nullptr) {
    cl_event done = nullptr;
    if (clEnqueueUnmapMemObject(device->sync_queue, mem, host_pointer, 0, nullptr, &done) ==
        CL_SUCCESS) {
      clWaitForEvents(1, &done);
      clReleaseEvent(done);
    }
  }
  clReleaseMemObject(mem);
  if (device != nullptr) device->allocated.fetch_sub(reserved_size);
}

Status AllocateBuffer(Device& device, tsr_mem_kind kind, uint64_t size, uint64_t alignment,
                      std::unique_ptr<Buffer>* out) {
  if (kind != TSR_MEM_DEVICE && kind != TSR_MEM_PINNED_HOST) {
    return InvalidArgument("memory kind ", kind,
                           " is not TSR_MEM_DEVICE (0) or TSR_MEM_PINNED_HOST (1)");
  }
  if (alignment != 0 && (alignment & (alignment - 1)) != 0) {
    return InvalidArgument("alignment ", alignment, " is not 0 or a power of two");
  }
  if (alignment > device.alignment) {
    return Unsupported("alignment ", alignment, " exceeds what '", device.name,
                       "' guarantees for a buffer's base address (", device.alignment,
                       " bytes, CL_DEVICE_MEM_BASE_ADDR_ALIGN); pass 0 or at most ",
                       device.alignment);
  }
  const uint64_t unit = device.alignment;
  if (size > device.max_alloc || size > device.global_mem) {
    return OutOfMemory("cannot allocate ", size, " bytes on '", device.name,
                       "': its largest allocation is ", device.max_alloc, " bytes of ",
                       device.global_mem, " in total");
  }
  auto buffer = std::make_unique<Buffer>();
  buffer->kind = kind;
  buffer->size = size;
  buffer->reserved_size = size == 0 ? unit : (size + unit - 1) / unit * unit;
  cl_mem_flags flags = CL_MEM_READ_WRITE;
  if (kind == TSR_MEM_PINNED_HOST) flags |= CL_MEM_ALLOC_HOST_PTR;
  cl_int err = CL_SUCCESS;
  buffer->mem = clCreateBuffer(device.context, flags, buffer->reserved_size, nullptr, &err);
  if (err != CL_SUCCESS) {
    buffer->mem = nullptr;
    return Status(TSR_ERR_OUT_OF_MEMORY,
                  StrCat("clCreateBuffer of ", buffer->reserved_size, " bytes on '", device.name,
                         "' failed: ", ClErrorName(err), "; free buffers or use less memory"));
  }
  buffer->device = &device;
  device.allocated.fetch_add(buffer->reserved_size);
  if (kind == TSR_MEM_PINNED_HOST) {
    buffer->host_pointer =
        clEnqueueMapBuffer(device.sync_queue, buffer->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                           buffer->reserved_size, 0, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) {
      buffer->host_pointer = nullptr;
      return ClCheck(err, "clEnqueueMapBuffer (pinned host memory)");
    }
  }
  *out = std::move(buffer);
  return OkStatus();
}

Status CheckRange(const Buffer& buffer, uint64_t offset, uint64_t size, const char* what) {
  if (offset > buffer.size || size > buffer.size - offset) {
    return InvalidArgument(what, " range [", offset, ", ", offset + size,
                           ") is outside the buffer of ", buffer.size, " bytes");
  }
  return OkStatus();
}

}  // namespace tessera::opencl
