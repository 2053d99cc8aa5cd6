// The cpu plugin's exported table: manifest, init/shutdown, devices,
// memory and copies here; streams, ops and collectives in their own files.
#include <algorithm>
#include <cstring>
#include <memory>

#include "collectives.h"
#include "entries.h"
#include "kit_names.h"
#include "host_info.h"
#include "plugin_state.h"

namespace tessera::cpu {
namespace {

const tsr_plugin_manifest kManifest = {
    sizeof(tsr_plugin_manifest),
    "cpu",
    "1.0.0",
    "Tessera's CPU device plugin: virtual devices on host memory, every v1 op, "
    "linear v2 (int8 weights), the fused decoder_layer, in-process collectives",
    TSR_PLUGIN_ABI_MAJOR,
    TSR_PLUGIN_ABI_MINOR,
    0,
    "none (x86-64 or any CPU; libc and pthreads)",
    TSR_CAP_PINNED_HOST | TSR_CAP_HOST_VISIBLE_DEVICE_MEM | TSR_CAP_COLLECTIVES |
        TSR_CAP_FUSED_OPS | TSR_CAP_GRAPHS,
};

void CopyString(char* dst, size_t capacity, const std::string& src) {
  size_t n = src.size() < capacity - 1 ? src.size() : capacity - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

Status FindBuffer(tsr_buffer handle, const char* what, std::shared_ptr<Buffer>* out) {
  TSR_CPU_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
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

// Runs `fn` now (no stream) or enqueues it, keeping `keep` alive until then.
template <typename Fn>
Status RunOrEnqueue(const std::shared_ptr<Stream>& stream, const char* what, Fn fn,
                    std::shared_ptr<Buffer> keep_a, std::shared_ptr<Buffer> keep_b = nullptr) {
  if (stream == nullptr) {
    fn();
    return OkStatus();
  }
  return stream->Enqueue(what, [fn, keep_a, keep_b](ExecContext&) {
    fn();
    return OkStatus();
  });
}

const char* LastError() { return LastErrorMessage(); }

int32_t Probe() { return 10; }

tsr_status Init(const tsr_init_args* args) {
  return Guard("init", [&] { return InitPlugin(args); });
}

tsr_status Shutdown() {
  return Guard("shutdown", [&] { return ShutdownPlugin(); });
}

tsr_status DeviceCount(int32_t* count_out) {
  return Guard("device_count", [&]() -> Status {
    if (count_out == nullptr) return InvalidArgument("count_out is NULL");
    TSR_CPU_RETURN_IF_ERROR(RequireState());
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
    TSR_CPU_RETURN_IF_ERROR(CheckDevice(device));
    const PluginState& state = *State();
    tsr_device_properties p{};
    p.struct_size = props->struct_size;
    std::string name = state.cpu_name;
    if (state.num_physical > 1) name += StrCat(" (virtual device ", state.physical[device], ")");
    // The kernel path, and where the avx512bf16 path runs bf16 prefill on
    // f32 FMAs (bf16_gemm_choice.h), that too: "[avx512bf16, f32 prefill GEMM]".
    const bool f32_prefill =
        state.isa == CpuIsa::kAvx512Bf16 && state.bf16_gemm.gemm == Bf16Gemm::kF32Fma;
    name += StrCat(" [", CpuIsaName(state.isa), f32_prefill ? ", f32 prefill GEMM" : "", "]");
    CopyString(p.name, sizeof(p.name), name);
    CopyString(p.vendor, sizeof(p.vendor), state.cpu_vendor);
    CopyString(p.driver_version, sizeof(p.driver_version), "");
    p.type = TSR_DEVICE_CPU;
    p.physical_index = state.physical[device];
    p.memory_total = state.memory_total;
    p.memory_free = MemoryFree();
    p.alignment = kMinAlignment;
    p.compute_units = static_cast<uint32_t>(state.pools[device]->size());  // its threads
    p.dtype_mask = (uint64_t{1} << TSR_DTYPE_F32) | (uint64_t{1} << TSR_DTYPE_F16) |
                   (uint64_t{1} << TSR_DTYPE_BF16) | (uint64_t{1} << TSR_DTYPE_I32) |
                   (uint64_t{1} << TSR_DTYPE_I64) | (uint64_t{1} << TSR_DTYPE_U8) |
                   (uint64_t{1} << TSR_DTYPE_I8);
    std::memcpy(props, &p, sizeof(p));
    return OkStatus();
  });
}

tsr_status BufferAlloc(int32_t device, tsr_mem_kind kind, uint64_t size, uint64_t alignment,
                       tsr_buffer* out) {
  return Guard("buffer_alloc", [&]() -> Status {
    if (out == nullptr) return InvalidArgument("out is NULL");
    TSR_CPU_RETURN_IF_ERROR(CheckDevice(device));
    std::unique_ptr<Buffer> buffer;
    TSR_CPU_RETURN_IF_ERROR(
        AllocateBuffer(device, kind, size, alignment, State()->memory_total,
                       State()->huge_pages, &buffer));
    buffer->Track(State()->memory[device]);
    *out = ToHandle<tsr_buffer>(State()->buffers.Add(std::shared_ptr<Buffer>(std::move(buffer))));
    return OkStatus();
  });
}

tsr_status BufferFree(tsr_buffer handle) {
  return Guard("buffer_free", [&]() -> Status {
    TSR_CPU_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
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
    TSR_CPU_RETURN_IF_ERROR(FindBuffer(handle, "the", &buffer));
    tsr_buffer_info out{};
    out.struct_size = info->struct_size;
    out.device = buffer->device;
    out.kind = buffer->kind;
    out.size = buffer->size;
    out.reserved_size = buffer->reserved_size;
    out.host_pointer = buffer->data;
    out.device_address = reinterpret_cast<uintptr_t>(buffer->data);
    // An older host's struct is shorter: write only what it has room for.
    std::memcpy(info, &out, std::min<size_t>(info->struct_size, sizeof(out)));
    return OkStatus();
  });
}

tsr_status MemoryStats(int32_t device, tsr_memory_stats* stats) {
  return Guard("memory_stats", [&]() -> Status {
    if (stats == nullptr) return InvalidArgument("stats is NULL");
    if (stats->struct_size < sizeof(tsr_memory_stats)) {
      return InvalidArgument("stats->struct_size ", stats->struct_size,
                             " is smaller than the v1.7 tsr_memory_stats (",
                             sizeof(tsr_memory_stats), " bytes)");
    }
    TSR_CPU_RETURN_IF_ERROR(CheckDevice(device));
    const PluginState& state = *State();
    tsr_memory_stats out{};
    out.struct_size = stats->struct_size;
    out.bytes_in_use = state.memory[device]->in_use();
    out.peak_bytes_in_use = state.memory[device]->peak();
    // Virtual devices share the machine's memory: each may take all of it.
    out.bytes_limit = state.memory_total;
    std::memcpy(stats, &out, sizeof(out));
    return OkStatus();
  });
}

tsr_status CopyHostToDevice(tsr_stream stream_handle, tsr_buffer dst, uint64_t dst_offset,
                            const void* src, uint64_t size) {
  return Guard("copy_host_to_device", [&]() -> Status {
    std::shared_ptr<Buffer> buffer;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindBuffer(dst, "destination", &buffer));
    TSR_CPU_RETURN_IF_ERROR(FindCopyStream(stream_handle, &stream));
    TSR_CPU_RETURN_IF_ERROR(CheckRange(*buffer, dst_offset, size, "destination"));
    if (size > 0 && src == nullptr) return InvalidArgument("src is NULL");
    if (size == 0) return OkStatus();
    char* to = buffer->data + dst_offset;
    const int threads = State()->threads;
    return RunOrEnqueue(stream, "copy_host_to_device", [to, src, size, threads] {
      CopyToBuffer(to, src, size, threads);
    }, buffer);
  });
}

tsr_status CopyDeviceToHost(tsr_stream stream_handle, void* dst, tsr_buffer src,
                            uint64_t src_offset, uint64_t size) {
  return Guard("copy_device_to_host", [&]() -> Status {
    std::shared_ptr<Buffer> buffer;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindBuffer(src, "source", &buffer));
    TSR_CPU_RETURN_IF_ERROR(FindCopyStream(stream_handle, &stream));
    TSR_CPU_RETURN_IF_ERROR(CheckRange(*buffer, src_offset, size, "source"));
    if (size > 0 && dst == nullptr) return InvalidArgument("dst is NULL");
    if (size == 0) return OkStatus();
    const char* from = buffer->data + src_offset;
    return RunOrEnqueue(stream, "copy_device_to_host", [dst, from, size] {
      std::memcpy(dst, from, size);
    }, buffer);
  });
}

tsr_status CopyDeviceToDevice(tsr_stream stream_handle, tsr_buffer dst, uint64_t dst_offset,
                              tsr_buffer src, uint64_t src_offset, uint64_t size) {
  return Guard("copy_device_to_device", [&]() -> Status {
    std::shared_ptr<Buffer> to_buffer, from_buffer;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindBuffer(dst, "destination", &to_buffer));
    TSR_CPU_RETURN_IF_ERROR(FindBuffer(src, "source", &from_buffer));
    TSR_CPU_RETURN_IF_ERROR(FindCopyStream(stream_handle, &stream));
    TSR_CPU_RETURN_IF_ERROR(CheckRange(*to_buffer, dst_offset, size, "destination"));
    TSR_CPU_RETURN_IF_ERROR(CheckRange(*from_buffer, src_offset, size, "source"));
    if (size == 0) return OkStatus();
    char* to = to_buffer->data + dst_offset;
    const char* from = from_buffer->data + src_offset;
    return RunOrEnqueue(stream, "copy_device_to_device", [to, from, size] {
      std::memmove(to, from, size);
    }, to_buffer, from_buffer);
  });
}

tsr_status Memset(tsr_stream stream_handle, tsr_buffer dst, uint64_t offset, uint8_t value,
                  uint64_t size) {
  return Guard("memset", [&]() -> Status {
    std::shared_ptr<Buffer> buffer;
    std::shared_ptr<Stream> stream;
    TSR_CPU_RETURN_IF_ERROR(FindBuffer(dst, "destination", &buffer));
    TSR_CPU_RETURN_IF_ERROR(FindCopyStream(stream_handle, &stream));
    TSR_CPU_RETURN_IF_ERROR(CheckRange(*buffer, offset, size, "memset"));
    if (size == 0) return OkStatus();
    char* to = buffer->data + offset;
    return RunOrEnqueue(stream, "memset", [to, value, size] { FillBuffer(to, value, size); },
                        buffer);
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
  api.stream_busy_ns = entry::StreamBusyNs;
  api.memory_stats = MemoryStats;
  return api;
}

}  // namespace
}  // namespace tessera::cpu

extern "C" TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  // Only a host of this major is trusted to have a log entry where we look.
  const bool usable = host != nullptr && host->abi_major == TSR_PLUGIN_ABI_MAJOR &&
                      host->struct_size >= sizeof(tsr_host_services);
  tessera::cpu::SetHostServices(usable ? host : nullptr);
  static const tsr_plugin_api api = tessera::cpu::MakeApi();
  return &api;
}
