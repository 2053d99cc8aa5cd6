// The OpenCL plugin's exported table: manifest, init/shutdown, devices,
// memory and copies here; streams and ops in their own files.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "entries.h"
#include "plugin_state.h"

namespace tessera::opencl {
namespace {

const tsr_plugin_manifest kManifest = {
    sizeof(tsr_plugin_manifest),
    "opencl",
    "1.0.0",
    "Tessera's OpenCL device plugin: every OpenCL 1.2 device of every platform, every v1 op "
    "as OpenCL C kernels",
    TSR_PLUGIN_ABI_MAJOR,
    TSR_PLUGIN_ABI_MINOR,
    0,
    "the OpenCL ICD loader (libOpenCL.so.1, Debian ocl-icd-libopencl1) and one OpenCL 1.2 "
    "platform with a device (e.g. pocl-opencl-icd for CPUs)",
    TSR_CAP_PINNED_HOST | TSR_CAP_GRAPHS | TSR_CAP_COLLECTIVES,
};

void CopyString(char* dst, size_t capacity, const std::string& src) {
  size_t n = src.size() < capacity - 1 ? src.size() : capacity - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

Status FindBuffer(tsr_buffer handle, const char* what, std::shared_ptr<Buffer>* out) {
  TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
  *out = State()->buffers.Find(handle);
  if (*out == nullptr) {
    return InvalidHandle(what, " buffer ", static_cast<const void*>(handle),
                         " is not a live buffer of this plugin (NULL, freed, or never "
                         "allocated here)");
  }
  return OkStatus();
}

// Resolves the optional stream of a copy (NULL: synchronous).
Status FindCopyStream(tsr_stream handle, std::shared_ptr<Stream>* out) {
  if (handle == nullptr) return OkStatus();
  *out = State()->streams.Find(handle);
  if (*out == nullptr) {
    return InvalidHandle("stream ", static_cast<const void*>(handle),
                         " is not a live stream of this plugin (pass NULL for a synchronous "
                         "copy)");
  }
  return OkStatus();
}

// Runs a runtime kernel (fill/copy) on `stream`, or synchronously on the
// device's own queue when `stream` is NULL.
Status RunRuntimeKernel(Device& device, Stream* stream, const std::string& name,
                        const KernelArgs& args, size_t work_items) {
  KernelSlot* slot = nullptr;
  TSR_CL_RETURN_IF_ERROR(device.Kernel(name, &slot));
  if (stream != nullptr) return stream->EnqueueKernel(*slot, args, NdRange::Linear(work_items), name);
  cl_event done = nullptr;
  {
    std::lock_guard<std::mutex> lock(slot->mu);
    cl_int err = clSetKernelArg(slot->kernel, 0, sizeof(cl_mem), &device.sync_status);
    cl_uint index = 1;
    for (const KernelArgs::Arg& arg : args.args()) {
      if (err != CL_SUCCESS) break;
      err = clSetKernelArg(slot->kernel, index++, arg.size, arg.bytes.data());
    }
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, StrCat(name, ": clSetKernelArg")));
    err = clEnqueueNDRangeKernel(device.sync_queue, slot->kernel, 1, nullptr, &work_items,
                                 nullptr, 0, nullptr, &done);
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, StrCat(name, ": clEnqueueNDRangeKernel")));
  }
  cl_int err = clWaitForEvents(1, &done);
  clReleaseEvent(done);
  return ClCheck(err, StrCat(name, ": clWaitForEvents"));
}

// A copy between two buffers of one context with the copy kernels.
Status CopyInContext(Stream* stream, Buffer& to, uint64_t dst_offset, Buffer& from,
                     uint64_t src_offset, uint64_t size) {
  Device& device = stream != nullptr ? stream->device() : *to.device;
  const bool overlap = to.mem == from.mem && dst_offset < src_offset + size &&
                       src_offset < dst_offset + size;
  if (overlap) {
    // Through a temporary buffer, so the copy behaves like memmove.
    cl_int err = CL_SUCCESS;
    cl_mem temp = clCreateBuffer(device.context, CL_MEM_READ_WRITE, size, nullptr, &err);
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, "clCreateBuffer (overlapping copy)"));
    Buffer staging;
    staging.mem = temp;  // released by ~Buffer (after queued users finish)
    staging.size = size;
    TSR_CL_RETURN_IF_ERROR(CopyInContext(stream, staging, 0, from, src_offset, size));
    return CopyInContext(stream, to, dst_offset, staging, 0, size);
  }
  KernelArgs args;
  if (dst_offset % 16 == 0 && src_offset % 16 == 0 && size % 16 == 0) {
    args.Mem(to.mem).ULong(dst_offset / 16).Mem(from.mem).ULong(src_offset / 16).ULong(size / 16);
    return RunRuntimeKernel(device, stream, "tsr_copy_vec16", args, size / 16);
  }
  args.Mem(to.mem).ULong(dst_offset).Mem(from.mem).ULong(src_offset).ULong(size);
  return RunRuntimeKernel(device, stream, "tsr_copy_bytes", args, size);
}

const char* LastError() { return LastErrorMessage(); }

int32_t Probe() { return ProbeScore(); }

tsr_status Init(const tsr_init_args* args) {
  return Guard("init", [&] { return InitPlugin(args); });
}

tsr_status Shutdown() {
  return Guard("shutdown", [&] { return ShutdownPlugin(); });
}

tsr_status DeviceCount(int32_t* count_out) {
  return Guard("device_count", [&]() -> Status {
    if (count_out == nullptr) return InvalidArgument("count_out is NULL");
    TSR_CL_RETURN_IF_ERROR(RequireState());
    *count_out = State()->device_count();
    return OkStatus();
  });
}

tsr_status DeviceProperties(int32_t device, tsr_device_properties* props) {
  return Guard("device_properties", [&]() -> Status {
    if (props == nullptr) return InvalidArgument("props is NULL");
    if (props->struct_size < sizeof(tsr_device_properties)) {
      return InvalidArgument("props->struct_size ", props->struct_size,
                             " is smaller than the v1.0 tsr_device_properties (",
                             sizeof(tsr_device_properties),
                             " bytes); set struct_size = sizeof(tsr_device_properties)");
    }
    TSR_CL_RETURN_IF_ERROR(CheckDevice(device));
    const Device& d = *State()->devices[device];
    tsr_device_properties p{};
    p.struct_size = props->struct_size;
    CopyString(p.name, sizeof(p.name), StrCat(d.name, " [", d.platform_name, "]"));
    CopyString(p.vendor, sizeof(p.vendor), d.vendor);
    // "3.1+debian (OpenCL 3.0)": the driver's version and the first two words
    // of CL_DEVICE_VERSION ("OpenCL 3.0 <vendor text>").
    const std::string cl_version = d.version.substr(0, d.version.find(' ', 7));
    CopyString(p.driver_version, sizeof(p.driver_version),
               StrCat(d.driver_version, " (", cl_version, ")"));
    p.type = (d.type & CL_DEVICE_TYPE_GPU)           ? TSR_DEVICE_GPU
             : (d.type & CL_DEVICE_TYPE_ACCELERATOR) ? TSR_DEVICE_ACCELERATOR
                                                     : TSR_DEVICE_CPU;
    p.physical_index = d.physical_index;
    p.memory_total = d.global_mem;
    const uint64_t used = d.allocated.load();
    p.memory_free = used < d.global_mem ? d.global_mem - used : 0;
    p.alignment = d.alignment;
    p.compute_units = d.compute_units;
    p.dtype_mask = (uint64_t{1} << TSR_DTYPE_F32) | (uint64_t{1} << TSR_DTYPE_F16) |
                   (uint64_t{1} << TSR_DTYPE_BF16) | (uint64_t{1} << TSR_DTYPE_I32);
    std::memcpy(props, &p, sizeof(p));
    return OkStatus();
  });
}

tsr_status BufferAlloc(int32_t device, tsr_mem_kind kind, uint64_t size, uint64_t alignment,
                       tsr_buffer* out) {
  return Guard("buffer_alloc", [&]() -> Status {
    if (out == nullptr) return InvalidArgument("out is NULL");
    TSR_CL_RETURN_IF_ERROR(CheckDevice(device));
    std::unique_ptr<Buffer> buffer;
    TSR_CL_RETURN_IF_ERROR(
        AllocateBuffer(*State()->devices[device], kind, size, alignment, &buffer));
    *out = ToHandle<tsr_buffer>(State()->buffers.Add(std::shared_ptr<Buffer>(std::move(buffer))));
    return OkStatus();
  });
}

tsr_status BufferFree(tsr_buffer handle) {
  return Guard("buffer_free", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
    if (State()->buffers.Remove(handle) == nullptr) {
      return InvalidHandle("buffer ", static_cast<const void*>(handle),
                           " is not a live buffer of this plugin (NULL, already freed, or "
                           "never allocated here)");
    }
    return OkStatus();
  });
}

tsr_status BufferInfo(tsr_buffer handle, tsr_buffer_info* info) {
  return Guard("buffer_info", [&]() -> Status {
    if (info == nullptr) return InvalidArgument("info is NULL");
    if (info->struct_size < TSR_BUFFER_INFO_V1_0_SIZE) {
      return InvalidArgument("info->struct_size ", info->struct_size,
                             " is smaller than the v1.0 tsr_buffer_info (",
                             TSR_BUFFER_INFO_V1_0_SIZE, " bytes)");
    }
    std::shared_ptr<Buffer> buffer;
    TSR_CL_RETURN_IF_ERROR(FindBuffer(handle, "the", &buffer));
    tsr_buffer_info out{};
    out.struct_size = info->struct_size;
    out.device = buffer->device->ordinal;
    out.kind = buffer->kind;
    out.size = buffer->size;
    out.reserved_size = buffer->reserved_size;
    out.host_pointer = buffer->host_pointer;
    // cl_mem objects have no address a host can name (no SVM here).
    out.device_address = 0;
    std::memcpy(info, &out, std::min<size_t>(info->struct_size, sizeof(out)));
    return OkStatus();
  });
}

tsr_status CopyHostToDevice(tsr_stream stream_handle, tsr_buffer dst, uint64_t dst_offset,
                            const void* src, uint64_t size) {
  return Guard("copy_host_to_device", [&]() -> Status {
    std::shared_ptr<Buffer> buffer;
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindBuffer(dst, "destination", &buffer));
    TSR_CL_RETURN_IF_ERROR(FindCopyStream(stream_handle, &stream));
    if (stream != nullptr && stream->capturing()) {
      return InvalidArgument("copy_host_to_device: the stream is capturing a graph; host copies "
                             "are not recorded (copy before begin_capture or after end_capture)");
    }
    TSR_CL_RETURN_IF_ERROR(CheckRange(*buffer, dst_offset, size, "destination"));
    if (size > 0 && src == nullptr) return InvalidArgument("src is NULL");
    if (size == 0) return OkStatus();
    if (stream == nullptr) {
      return ClCheck(clEnqueueWriteBuffer(buffer->device->sync_queue, buffer->mem, CL_TRUE,
                                          dst_offset, size, src, 0, nullptr, nullptr),
                     "clEnqueueWriteBuffer");
    }
    cl_event event = nullptr;
    TSR_CL_RETURN_IF_ERROR(ClCheck(clEnqueueWriteBuffer(stream->queue(), buffer->mem, CL_FALSE,
                                                        dst_offset, size, src, 0, nullptr,
                                                        &event),
                                   "clEnqueueWriteBuffer"));
    stream->Track(event);
    return OkStatus();
  });
}

tsr_status CopyDeviceToHost(tsr_stream stream_handle, void* dst, tsr_buffer src,
                            uint64_t src_offset, uint64_t size) {
  return Guard("copy_device_to_host", [&]() -> Status {
    std::shared_ptr<Buffer> buffer;
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindBuffer(src, "source", &buffer));
    TSR_CL_RETURN_IF_ERROR(FindCopyStream(stream_handle, &stream));
    if (stream != nullptr && stream->capturing()) {
      return InvalidArgument("copy_device_to_host: the stream is capturing a graph; host copies "
                             "are not recorded (copy before begin_capture or after end_capture)");
    }
    TSR_CL_RETURN_IF_ERROR(CheckRange(*buffer, src_offset, size, "source"));
    if (size > 0 && dst == nullptr) return InvalidArgument("dst is NULL");
    if (size == 0) return OkStatus();
    if (stream == nullptr) {
      return ClCheck(clEnqueueReadBuffer(buffer->device->sync_queue, buffer->mem, CL_TRUE,
                                         src_offset, size, dst, 0, nullptr, nullptr),
                     "clEnqueueReadBuffer");
    }
    cl_event event = nullptr;
    TSR_CL_RETURN_IF_ERROR(ClCheck(clEnqueueReadBuffer(stream->queue(), buffer->mem, CL_FALSE,
                                                       src_offset, size, dst, 0, nullptr, &event),
                                   "clEnqueueReadBuffer"));
    stream->Track(event);
    return OkStatus();
  });
}

tsr_status CopyDeviceToDevice(tsr_stream stream_handle, tsr_buffer dst, uint64_t dst_offset,
                              tsr_buffer src, uint64_t src_offset, uint64_t size) {
  return Guard("copy_device_to_device", [&]() -> Status {
    std::shared_ptr<Buffer> to, from;
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindBuffer(dst, "destination", &to));
    TSR_CL_RETURN_IF_ERROR(FindBuffer(src, "source", &from));
    TSR_CL_RETURN_IF_ERROR(FindCopyStream(stream_handle, &stream));
    TSR_CL_RETURN_IF_ERROR(CheckRange(*to, dst_offset, size, "destination"));
    TSR_CL_RETURN_IF_ERROR(CheckRange(*from, src_offset, size, "source"));
    if (size == 0) return OkStatus();
    if (to->device->context == from->device->context &&
        (stream == nullptr || stream->device().context == to->device->context)) {
      return CopyInContext(stream.get(), *to, dst_offset, *from, src_offset, size);
    }
    // Across platforms: through host memory, after the stream's earlier work.
    if (stream != nullptr) TSR_CL_RETURN_IF_ERROR(stream->Synchronize());
    std::vector<unsigned char> staging(size);
    TSR_CL_RETURN_IF_ERROR(ClCheck(clEnqueueReadBuffer(from->device->sync_queue, from->mem,
                                                       CL_TRUE, src_offset, size,
                                                       staging.data(), 0, nullptr, nullptr),
                                   "clEnqueueReadBuffer (cross-platform copy)"));
    return ClCheck(clEnqueueWriteBuffer(to->device->sync_queue, to->mem, CL_TRUE, dst_offset,
                                        size, staging.data(), 0, nullptr, nullptr),
                   "clEnqueueWriteBuffer (cross-platform copy)");
  });
}

tsr_status Memset(tsr_stream stream_handle, tsr_buffer dst, uint64_t offset, uint8_t value,
                  uint64_t size) {
  return Guard("memset", [&]() -> Status {
    std::shared_ptr<Buffer> buffer;
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindBuffer(dst, "destination", &buffer));
    TSR_CL_RETURN_IF_ERROR(FindCopyStream(stream_handle, &stream));
    TSR_CL_RETURN_IF_ERROR(CheckRange(*buffer, offset, size, "memset"));
    if (size == 0) return OkStatus();
    if (stream != nullptr && stream->device().context != buffer->device->context) {
      return InvalidArgument("memset: the buffer lives on '", buffer->device->name,
                             "' and the stream on '", stream->device().name,
                             "' (another platform)");
    }
    KernelArgs args;
    args.Mem(buffer->mem).ULong(offset).ULong(size).UChar(value);
    return RunRuntimeKernel(stream != nullptr ? stream->device() : *buffer->device, stream.get(),
                            "tsr_fill_bytes", args, size);
  });
}

tsr_plugin_api MakeApi() {
  tsr_plugin_api api{};
  api.struct_size = sizeof(tsr_plugin_api);
  api.abi_major = TSR_PLUGIN_ABI_MAJOR;
  api.abi_minor = TSR_PLUGIN_ABI_MINOR;
  api.manifest = &kManifest;
  api.last_error = LastError;
  api.probe = Probe;
  api.init = Init;
  api.shutdown = Shutdown;
  api.device_count = DeviceCount;
  api.device_properties = DeviceProperties;
  api.buffer_alloc = BufferAlloc;
  api.buffer_free = BufferFree;
  api.buffer_info = BufferInfo;
  api.stream_create = entry::StreamCreate;
  api.stream_destroy = entry::StreamDestroy;
  api.stream_synchronize = entry::StreamSynchronize;
  api.stream_query = entry::StreamQuery;
  api.event_create = entry::EventCreate;
  api.event_destroy = entry::EventDestroy;
  api.event_record = entry::EventRecord;
  api.stream_wait_event = entry::StreamWaitEvent;
  api.event_synchronize = entry::EventSynchronize;
  api.event_query = entry::EventQuery;
  api.copy_host_to_device = CopyHostToDevice;
  api.copy_device_to_host = CopyDeviceToHost;
  api.copy_device_to_device = CopyDeviceToDevice;
  api.memset = Memset;
  api.list_ops = entry::ListOps;
  api.resolve_op = entry::ResolveOp;
  api.launch = entry::Launch;
  api.comm = CommApi();
  static const tsr_graph_api kGraphApi = {
      sizeof(tsr_graph_api), entry::GraphBeginCapture, entry::GraphEndCapture,
      entry::GraphLaunch, entry::GraphDestroy};
  api.graph = &kGraphApi;
  api.stream_busy_ns = nullptr;  // optional (1.1); not measured here
  return api;
}

}  // namespace
}  // namespace tessera::opencl

extern "C" TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  const bool usable = host != nullptr && host->abi_major == TSR_PLUGIN_ABI_MAJOR &&
                      host->struct_size >= sizeof(tsr_host_services);
  tessera::opencl::SetHostServices(usable ? host : nullptr);
  static const tsr_plugin_api api = tessera::opencl::MakeApi();
  return &api;
}
