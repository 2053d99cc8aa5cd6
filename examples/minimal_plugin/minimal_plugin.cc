// minimal_plugin.cc — the smallest complete Tessera device plugin.
//
// Read this file to learn the plugin ABI (include/tessera/plugin/
// tessera_plugin.h). It is built against that header alone, links to nothing
// of Tessera, and implements every required entry for real:
//
//   - a "device" is plain host memory (the `devices=N` init option makes N
//     of them; the host's visible-device filter picks among them);
//   - buffers, copies and memset work on that memory, with bounds checks;
//   - streams execute work synchronously, at enqueue time. The ABI lets a
//     plugin do this only because the observable result is the same as an
//     in-order queue that has already drained: every stream is always idle,
//     every event is complete the moment it is recorded, and errors are
//     returned at enqueue instead of being sticky. A real device enqueues
//     and returns at once (rule 3);
//   - ops: only `add` (F32) and `cast` (F32 <-> BF16). Everything else the
//     host runs on the cpu plugin instead (op fallback);
//   - no collectives and no graphs: those optional tables are NULL.
//
// probe() returns 1, below the cpu plugin's 10, so Tessera never picks this
// plugin by itself: ask for it with --device-plugin PATH.
//
// Error handling follows rule 2: every entry validates its arguments and
// handles (a registry of live handles turns a stale or foreign pointer into
// TSR_ERR_INVALID_HANDLE rather than a crash) and leaves a message for
// last_error(). One global mutex serialises all calls; a real plugin would
// lock per device or per stream.
#include <tessera/plugin/tessera_plugin.h>

#include <unistd.h>

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

// ------------------------------------------------------------------------
// Errors: a message per thread, returned by last_error().
// ------------------------------------------------------------------------

thread_local std::string g_last_error;

tsr_status Fail(tsr_status code, const char* format, ...) {
  char message[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  g_last_error = std::string("minimal: ") + message;
  return code;
}

const char* LastError() { return g_last_error.c_str(); }

// ------------------------------------------------------------------------
// State
// ------------------------------------------------------------------------

struct Buffer {
  int32_t device;
  tsr_mem_kind kind;
  uint64_t size;      // bytes asked for
  uint64_t reserved;  // bytes allocated
  unsigned char* data;
};
struct Stream {
  int32_t device;
};
struct Event {
  int32_t device;
};

struct State {
  std::mutex mu;
  bool initialized = false;
  std::vector<int32_t> devices;  // ordinal -> physical index
  std::set<Buffer*> buffers;     // live handles
  std::set<Stream*> streams;
  std::set<Event*> events;
};

State g_state;
const tsr_host_services* g_host = nullptr;
constexpr uint64_t kAlignment = 64;

void Log(tsr_log_level level, const char* message) {
  if (g_host != nullptr && g_host->log != nullptr) {
    g_host->log(g_host->host_context, level, message);
  }
}

// Each lookup checks that the handle is one we created and still own.
tsr_status CheckInit() {
  if (!g_state.initialized) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "plugin not initialised; call init");
  }
  return TSR_OK;
}
tsr_status CheckDevice(int32_t device) {
  if (device < 0 || device >= static_cast<int32_t>(g_state.devices.size())) {
    return Fail(TSR_ERR_NOT_FOUND, "no device %d (this plugin has %zu)", device,
                g_state.devices.size());
  }
  return TSR_OK;
}
Buffer* FindBuffer(tsr_buffer handle) {
  auto* b = reinterpret_cast<Buffer*>(handle);
  return g_state.buffers.count(b) ? b : nullptr;
}
Stream* FindStream(tsr_stream handle) {
  auto* s = reinterpret_cast<Stream*>(handle);
  return g_state.streams.count(s) ? s : nullptr;
}
Event* FindEvent(tsr_event handle) {
  auto* e = reinterpret_cast<Event*>(handle);
  return g_state.events.count(e) ? e : nullptr;
}

// A NULL stream means "synchronous"; any other must be ours.
tsr_status CheckStreamOrNull(tsr_stream stream) {
  if (stream != nullptr && FindStream(stream) == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown stream %p", (void*)stream);
  }
  return TSR_OK;
}

// Checks that [offset, offset + size) lies inside the buffer.
tsr_status CheckRange(tsr_buffer handle, uint64_t offset, uint64_t size,
                      Buffer** out) {
  Buffer* b = FindBuffer(handle);
  if (b == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown buffer %p", (void*)handle);
  }
  if (offset > b->size || size > b->size - offset) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "bytes [%llu, %llu) are outside the %llu-byte buffer",
                (unsigned long long)offset, (unsigned long long)(offset + size),
                (unsigned long long)b->size);
  }
  *out = b;
  return TSR_OK;
}

#define RETURN_IF_FAILED(expr)             \
  do {                                     \
    tsr_status status_ = (expr);           \
    if (status_ != TSR_OK) return status_; \
  } while (0)

// ------------------------------------------------------------------------
// Lifecycle and devices
// ------------------------------------------------------------------------

int32_t Probe() { return 1; }  // always present, never preferred

tsr_status Init(const tsr_init_args* args) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  if (g_state.initialized) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "init called twice");
  }
  long num_devices = 1;
  const tsr_option* options = nullptr;
  size_t num_options = 0;
  int32_t num_visible = -1;
  const int32_t* visible = nullptr;
  if (args != nullptr) {
    // Read only the fields the caller's struct_size covers (rule 1).
    if (args->struct_size >=
        offsetof(tsr_init_args, num_options) + sizeof(args->num_options)) {
      options = args->options;
      num_options = args->num_options;
    }
    if (args->struct_size >= offsetof(tsr_init_args, num_visible_devices) +
                                 sizeof(args->num_visible_devices)) {
      visible = args->visible_devices;
      num_visible = args->num_visible_devices;
    }
  }
  for (size_t i = 0; i < num_options; ++i) {
    const char* key = options[i].key ? options[i].key : "";
    const char* value = options[i].value ? options[i].value : "";
    if (std::strcmp(key, "devices") == 0) {
      char* end = nullptr;
      num_devices = std::strtol(value, &end, 10);
      if (*value == '\0' || *end != '\0' || num_devices < 1 ||
          num_devices > 64) {
        return Fail(TSR_ERR_INVALID_ARGUMENT,
                    "option devices=%s: expected a number from 1 to 64", value);
      }
    } else {
      return Fail(TSR_ERR_INVALID_ARGUMENT,
                  "unknown option '%s'; known options: devices", key);
    }
  }
  if (num_visible > 0 && visible == nullptr) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "num_visible_devices is %d but visible_devices is NULL",
                num_visible);
  }
  g_state.devices.clear();
  if (num_visible < 0) {
    for (int32_t i = 0; i < num_devices; ++i) g_state.devices.push_back(i);
  } else {
    // Filter before numbering: listed physical indices that exist, in order.
    for (int32_t i = 0; i < num_visible; ++i) {
      if (visible[i] >= 0 && visible[i] < num_devices) {
        g_state.devices.push_back(visible[i]);
      }
    }
  }
  g_state.initialized = true;
  char message[96];
  std::snprintf(message, sizeof(message), "minimal plugin ready: %zu device(s)",
                g_state.devices.size());
  Log(TSR_LOG_DEBUG, message);
  return TSR_OK;
}

tsr_status Shutdown() {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  for (Buffer* b : g_state.buffers) {
    std::free(b->data);
    delete b;
  }
  for (Stream* s : g_state.streams) delete s;
  for (Event* e : g_state.events) delete e;
  g_state.buffers.clear();
  g_state.streams.clear();
  g_state.events.clear();
  g_state.devices.clear();
  g_state.initialized = false;
  return TSR_OK;
}

tsr_status DeviceCount(int32_t* count_out) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  if (count_out == nullptr) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "count_out is NULL");
  }
  *count_out = static_cast<int32_t>(g_state.devices.size());
  return TSR_OK;
}

tsr_status DeviceProperties(int32_t device, tsr_device_properties* props) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckDevice(device));
  if (props == nullptr || props->struct_size == 0) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "props is NULL or has no struct_size");
  }
  tsr_device_properties p;
  std::memset(&p, 0, sizeof(p));
  std::snprintf(p.name, sizeof(p.name), "minimal host-memory device %d",
                g_state.devices[device]);
  std::snprintf(p.vendor, sizeof(p.vendor), "Tessera example");
  p.type = TSR_DEVICE_CPU;
  p.physical_index = g_state.devices[device];
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  p.memory_total = page * static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES));
  p.memory_free = page * static_cast<uint64_t>(sysconf(_SC_AVPHYS_PAGES));
  p.alignment = kAlignment;
  p.compute_units = 1;
  p.dtype_mask = (1u << TSR_DTYPE_F32) | (1u << TSR_DTYPE_BF16);
  // Write only as much as the caller's struct holds; keep its struct_size.
  uint32_t size =
      props->struct_size < sizeof(p) ? props->struct_size : (uint32_t)sizeof(p);
  p.struct_size = props->struct_size;
  std::memcpy(props, &p, size);
  return TSR_OK;
}

// ------------------------------------------------------------------------
// Memory
// ------------------------------------------------------------------------

tsr_status BufferAlloc(int32_t device, tsr_mem_kind kind, uint64_t size,
                       uint64_t alignment, tsr_buffer* out) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckDevice(device));
  if (out == nullptr) return Fail(TSR_ERR_INVALID_ARGUMENT, "out is NULL");
  if (kind != TSR_MEM_DEVICE && kind != TSR_MEM_PINNED_HOST) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "unknown memory kind %d", kind);
  }
  if (alignment & (alignment - 1)) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "alignment %llu is not a power of two",
                (unsigned long long)alignment);
  }
  if (alignment < kAlignment) alignment = kAlignment;
  if (size > (uint64_t{1} << 48) || alignment > (uint64_t{1} << 30)) {
    return Fail(TSR_ERR_OUT_OF_MEMORY, "cannot allocate %llu bytes",
                (unsigned long long)size);
  }
  // aligned_alloc wants a multiple of the alignment; size 0 still gets a
  // distinct allocation.
  uint64_t reserved = (size + alignment - 1) / alignment * alignment;
  if (reserved == 0) reserved = alignment;
  void* data = std::aligned_alloc(alignment, reserved);
  if (data == nullptr) {
    return Fail(TSR_ERR_OUT_OF_MEMORY, "out of host memory for %llu bytes",
                (unsigned long long)size);
  }
  auto* b = new Buffer{device, kind, size, reserved,
                       static_cast<unsigned char*>(data)};
  g_state.buffers.insert(b);
  *out = reinterpret_cast<tsr_buffer>(b);
  return TSR_OK;
}

tsr_status BufferFree(tsr_buffer handle) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  Buffer* b = FindBuffer(handle);
  if (b == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown buffer %p", (void*)handle);
  }
  g_state.buffers.erase(b);
  std::free(b->data);
  delete b;
  return TSR_OK;
}

tsr_status BufferInfo(tsr_buffer handle, tsr_buffer_info* info) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  Buffer* b = FindBuffer(handle);
  if (b == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown buffer %p", (void*)handle);
  }
  if (info == nullptr || info->struct_size < TSR_BUFFER_INFO_V1_0_SIZE) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "info is NULL or its struct_size is below the 1.0 struct's");
  }
  tsr_buffer_info i;
  std::memset(&i, 0, sizeof(i));
  i.struct_size = info->struct_size;
  i.device = b->device;
  i.kind = b->kind;
  i.size = b->size;
  i.reserved_size = b->reserved;
  i.host_pointer = b->data;  // TSR_CAP_HOST_VISIBLE_DEVICE_MEM
  i.device_address = reinterpret_cast<uintptr_t>(b->data);  // since 1.7
  std::memcpy(info, &i,
              info->struct_size < sizeof(i) ? info->struct_size : sizeof(i));
  return TSR_OK;
}

// ------------------------------------------------------------------------
// Streams and events (synchronous: see the top of the file)
// ------------------------------------------------------------------------

tsr_status StreamCreate(int32_t device, tsr_stream* out) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckDevice(device));
  if (out == nullptr) return Fail(TSR_ERR_INVALID_ARGUMENT, "out is NULL");
  auto* s = new Stream{device};
  g_state.streams.insert(s);
  *out = reinterpret_cast<tsr_stream>(s);
  return TSR_OK;
}

tsr_status StreamDestroy(tsr_stream handle) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  Stream* s = FindStream(handle);
  if (s == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown stream %p", (void*)handle);
  }
  g_state.streams.erase(s);
  delete s;
  return TSR_OK;
}

// Work ran at enqueue, so a valid stream is always drained and error-free.
tsr_status StreamCheck(tsr_stream handle) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  if (FindStream(handle) == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown stream %p", (void*)handle);
  }
  return TSR_OK;
}
tsr_status StreamSynchronize(tsr_stream s) { return StreamCheck(s); }
tsr_status StreamQuery(tsr_stream s) { return StreamCheck(s); }

tsr_status EventCreate(int32_t device, tsr_event* out) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckDevice(device));
  if (out == nullptr) return Fail(TSR_ERR_INVALID_ARGUMENT, "out is NULL");
  auto* e = new Event{device};
  g_state.events.insert(e);
  *out = reinterpret_cast<tsr_event>(e);
  return TSR_OK;
}

tsr_status EventDestroy(tsr_event handle) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  Event* e = FindEvent(handle);
  if (e == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown event %p", (void*)handle);
  }
  g_state.events.erase(e);
  delete e;
  return TSR_OK;
}

tsr_status EventRecord(tsr_event event, tsr_stream stream) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  Event* e = FindEvent(event);
  Stream* s = FindStream(stream);
  if (e == nullptr || s == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown %s",
                e == nullptr ? "event" : "stream");
  }
  if (e->device != s->device) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "event of device %d recorded on a stream of device %d",
                e->device, s->device);
  }
  return TSR_OK;  // everything before it has already run: complete at once
}

tsr_status StreamWaitEvent(tsr_stream stream, tsr_event event) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  if (FindStream(stream) == nullptr || FindEvent(event) == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown %s",
                FindStream(stream) == nullptr ? "stream" : "event");
  }
  return TSR_OK;  // the event is complete, so there is nothing to wait for
}

tsr_status EventCheck(tsr_event handle) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  if (FindEvent(handle) == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown event %p", (void*)handle);
  }
  return TSR_OK;
}
tsr_status EventSynchronize(tsr_event e) { return EventCheck(e); }
tsr_status EventQuery(tsr_event e) { return EventCheck(e); }

// ------------------------------------------------------------------------
// Copies and memset (a stream or NULL; both run now)
// ------------------------------------------------------------------------

tsr_status CopyHostToDevice(tsr_stream stream, tsr_buffer dst,
                            uint64_t dst_offset, const void* src,
                            uint64_t size) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckStreamOrNull(stream));
  Buffer* b = nullptr;
  RETURN_IF_FAILED(CheckRange(dst, dst_offset, size, &b));
  if (src == nullptr && size > 0) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "src is NULL");
  }
  if (size > 0) std::memcpy(b->data + dst_offset, src, size);
  return TSR_OK;
}

tsr_status CopyDeviceToHost(tsr_stream stream, void* dst, tsr_buffer src,
                            uint64_t src_offset, uint64_t size) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckStreamOrNull(stream));
  Buffer* b = nullptr;
  RETURN_IF_FAILED(CheckRange(src, src_offset, size, &b));
  if (dst == nullptr && size > 0) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "dst is NULL");
  }
  if (size > 0) std::memcpy(dst, b->data + src_offset, size);
  return TSR_OK;
}

tsr_status CopyDeviceToDevice(tsr_stream stream, tsr_buffer dst,
                              uint64_t dst_offset, tsr_buffer src,
                              uint64_t src_offset, uint64_t size) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckStreamOrNull(stream));
  Buffer* d = nullptr;
  Buffer* s = nullptr;
  RETURN_IF_FAILED(CheckRange(dst, dst_offset, size, &d));
  RETURN_IF_FAILED(CheckRange(src, src_offset, size, &s));
  if (size > 0) std::memmove(d->data + dst_offset, s->data + src_offset, size);
  return TSR_OK;
}

tsr_status Memset(tsr_stream stream, tsr_buffer dst, uint64_t offset,
                  uint8_t value, uint64_t size) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckStreamOrNull(stream));
  Buffer* b = nullptr;
  RETURN_IF_FAILED(CheckRange(dst, offset, size, &b));
  if (size > 0) std::memset(b->data + offset, value, size);
  return TSR_OK;
}

// ------------------------------------------------------------------------
// Ops: add (F32) and cast (F32 <-> BF16)
// ------------------------------------------------------------------------

constexpr tsr_op_signature kOps[] = {
    {sizeof(tsr_op_signature),
     TSR_OP_ADD,
     1,
     3,
     {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32}},
    {sizeof(tsr_op_signature),
     TSR_OP_CAST,
     1,
     2,
     {TSR_DTYPE_F32, TSR_DTYPE_BF16}},
    {sizeof(tsr_op_signature),
     TSR_OP_CAST,
     1,
     2,
     {TSR_DTYPE_BF16, TSR_DTYPE_F32}},
};
constexpr size_t kNumOps = sizeof(kOps) / sizeof(kOps[0]);

// A kernel handle is a pointer to its row of kOps (valid while loaded).
const tsr_op_signature* FindKernel(tsr_kernel kernel) {
  for (size_t i = 0; i < kNumOps; ++i) {
    if (reinterpret_cast<tsr_kernel>(const_cast<tsr_op_signature*>(&kOps[i])) ==
        kernel) {
      return &kOps[i];
    }
  }
  return nullptr;
}

tsr_status ListOps(const tsr_op_signature** ops_out, size_t* count_out) {
  if (ops_out == nullptr || count_out == nullptr) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "ops_out or count_out is NULL");
  }
  *ops_out = kOps;
  *count_out = kNumOps;
  return TSR_OK;
}

tsr_status ResolveOp(int32_t device, const tsr_op_signature* sig,
                     tsr_kernel* out) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  RETURN_IF_FAILED(CheckDevice(device));
  if (sig == nullptr || out == nullptr) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "signature or out is NULL");
  }
  for (size_t i = 0; i < kNumOps; ++i) {
    const tsr_op_signature& k = kOps[i];
    if (k.op != sig->op || k.version != sig->version ||
        k.num_args != sig->num_args) {
      continue;
    }
    if (std::memcmp(k.dtypes, sig->dtypes, k.num_args * sizeof(tsr_dtype))) {
      continue;
    }
    *out = reinterpret_cast<tsr_kernel>(const_cast<tsr_op_signature*>(&k));
    return TSR_OK;
  }
  return Fail(TSR_ERR_NOT_FOUND,
              "op %u v%u with these dtypes is not implemented (only add f32 "
              "and cast f32<->bf16)",
              sig->op, sig->version);
}

size_t DTypeSize(tsr_dtype dtype) {
  return dtype == TSR_DTYPE_F32 ? 4 : dtype == TSR_DTYPE_BF16 ? 2 : 0;
}

float LoadFloat(const unsigned char* p, tsr_dtype dtype) {
  uint32_t bits = 0;
  if (dtype == TSR_DTYPE_BF16) {
    uint16_t half;
    std::memcpy(&half, p, 2);
    bits = uint32_t(half) << 16;
  } else {
    std::memcpy(&bits, p, 4);
  }
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

void StoreFloat(unsigned char* p, tsr_dtype dtype, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (dtype == TSR_DTYPE_BF16) {
    uint16_t half;
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
      half = uint16_t((bits >> 16) | 0x40);  // keep NaN a (quiet) NaN
    } else {
      half = uint16_t((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);  // RNE
    }
    std::memcpy(p, &half, 2);
  } else {
    std::memcpy(p, &bits, 4);
  }
}

// Validates one tensor argument: ours, on `device`, with the kernel's dtype
// and the shape of `like`, and every addressed byte inside the buffer.
tsr_status CheckTensor(const tsr_tensor* t, tsr_dtype dtype, int32_t device,
                       const tsr_tensor* like, const char* what) {
  if (t->struct_size < sizeof(tsr_tensor)) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "%s: struct_size %u too small", what,
                t->struct_size);
  }
  if (t->dtype != dtype) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "%s: dtype %d, kernel wants %d", what,
                t->dtype, dtype);
  }
  if (t->ndim < 0 || t->ndim > TSR_MAX_DIMS) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "%s: ndim %d", what, t->ndim);
  }
  Buffer* b = FindBuffer(t->buffer);
  if (b == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "%s: unknown buffer", what);
  }
  if (b->device != device) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "%s: buffer is on device %d, the stream on device %d", what,
                b->device, device);
  }
  uint64_t last = 0;  // element offset of the last element
  bool empty = false;
  for (int k = 0; k < t->ndim; ++k) {
    if (t->shape[k] < 0 || t->strides[k] < 0 ||
        (like != nullptr && t->shape[k] != like->shape[k])) {
      return Fail(TSR_ERR_INVALID_ARGUMENT, "%s: bad shape/stride at dim %d",
                  what, k);
    }
    if (t->shape[k] == 0) {
      empty = true;
      continue;
    }
    // Huge strides must not wrap around and pass the bounds check below.
    uint64_t span = 0;
    if (__builtin_mul_overflow(uint64_t(t->shape[k] - 1),
                               uint64_t(t->strides[k]), &span) ||
        __builtin_add_overflow(last, span, &last)) {
      return Fail(TSR_ERR_INVALID_ARGUMENT,
                  "%s: shape and strides address more than 2^64 elements",
                  what);
    }
  }
  if (like != nullptr && like->ndim != t->ndim) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "%s: rank %d, expected %d", what,
                t->ndim, like->ndim);
  }
  uint64_t bytes = 0;
  if (!empty && __builtin_mul_overflow(last + 1, uint64_t(DTypeSize(dtype)),
                                       &bytes)) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "%s: addresses bytes past the end of its buffer", what);
  }
  if (t->offset > b->size || bytes > b->size - t->offset) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "%s: addresses bytes past the end of its buffer", what);
  }
  return TSR_OK;
}

// Calls fn(pointer to the current element of each tensor) for every element
// of tensors[0]'s shape, walking each tensor with its own strides.
template <typename Fn>
void ForEachElement(const tsr_tensor* const* tensors, int count, Fn fn) {
  unsigned char* base[3];
  for (int a = 0; a < count; ++a) {
    base[a] = FindBuffer(tensors[a]->buffer)->data + tensors[a]->offset;
  }
  const tsr_tensor& t0 = *tensors[0];
  int64_t total = 1;
  for (int k = 0; k < t0.ndim; ++k) total *= t0.shape[k];
  int64_t index[TSR_MAX_DIMS] = {0};
  for (int64_t n = 0; n < total; ++n) {
    unsigned char* ptrs[3];
    for (int a = 0; a < count; ++a) {
      const tsr_tensor& t = *tensors[a];
      int64_t element = 0;
      for (int k = 0; k < t.ndim; ++k) element += index[k] * t.strides[k];
      ptrs[a] = base[a] + element * DTypeSize(t.dtype);
    }
    fn(ptrs);
    for (int k = t0.ndim - 1; k >= 0; --k) {  // odometer increment
      if (++index[k] < t0.shape[k]) break;
      index[k] = 0;
    }
  }
}

tsr_status Launch(tsr_kernel kernel, tsr_stream stream,
                  const tsr_tensor* inputs, size_t num_inputs,
                  const tsr_tensor* outputs, size_t num_outputs,
                  const void* params, size_t params_size) {
  std::lock_guard<std::mutex> lock(g_state.mu);
  RETURN_IF_FAILED(CheckInit());
  const tsr_op_signature* sig = FindKernel(kernel);
  if (sig == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown kernel %p", (void*)kernel);
  }
  Stream* s = FindStream(stream);
  if (s == nullptr) {
    return Fail(TSR_ERR_INVALID_HANDLE, "unknown stream %p", (void*)stream);
  }
  const size_t want_inputs = sig->op == TSR_OP_ADD ? 2 : 1;
  if (num_inputs != want_inputs || num_outputs != 1 || inputs == nullptr ||
      outputs == nullptr) {
    return Fail(TSR_ERR_INVALID_ARGUMENT,
                "op %u takes %zu inputs and 1 output, got %zu and %zu", sig->op,
                want_inputs, num_inputs, num_outputs);
  }
  // Both ops take no params (NULL); anything else is the caller's mistake.
  (void)params_size;
  if (params != nullptr) {
    return Fail(TSR_ERR_INVALID_ARGUMENT, "op %u takes no params", sig->op);
  }
  const tsr_tensor* y = &outputs[0];
  if (sig->op == TSR_OP_ADD) {
    RETURN_IF_FAILED(CheckTensor(&inputs[0], TSR_DTYPE_F32, s->device, nullptr,
                                 "add input a"));
    RETURN_IF_FAILED(CheckTensor(&inputs[1], TSR_DTYPE_F32, s->device,
                                 &inputs[0], "add input b"));
    RETURN_IF_FAILED(
        CheckTensor(y, TSR_DTYPE_F32, s->device, &inputs[0], "add output y"));
    const tsr_tensor* args[3] = {&inputs[0], &inputs[1], y};
    ForEachElement(args, 3, [](unsigned char** p) {
      float a, b;
      std::memcpy(&a, p[0], 4);
      std::memcpy(&b, p[1], 4);
      float sum = a + b;  // read both before writing: y may alias a or b
      std::memcpy(p[2], &sum, 4);
    });
    return TSR_OK;
  }
  // cast
  const tsr_dtype from = sig->dtypes[0];
  const tsr_dtype to = sig->dtypes[1];
  RETURN_IF_FAILED(
      CheckTensor(&inputs[0], from, s->device, nullptr, "cast input x"));
  RETURN_IF_FAILED(CheckTensor(y, to, s->device, &inputs[0], "cast output y"));
  const tsr_tensor* args[2] = {&inputs[0], y};
  ForEachElement(args, 2, [from, to](unsigned char** p) {
    StoreFloat(p[1], to, LoadFloat(p[0], from));
  });
  return TSR_OK;
}

// ------------------------------------------------------------------------
// Manifest and table
// ------------------------------------------------------------------------

const tsr_plugin_manifest kManifest = {
    sizeof(tsr_plugin_manifest),
    "minimal",
    "1.0.0",
    "Example plugin: host memory as a device, synchronous streams, ops add "
    "and cast",
    TSR_PLUGIN_ABI_MAJOR,
    TSR_PLUGIN_ABI_MINOR,
    0,
    "nothing beyond the C and C++ runtime libraries",
    TSR_CAP_PINNED_HOST | TSR_CAP_HOST_VISIBLE_DEVICE_MEM,
};

tsr_plugin_api MakeApi() {
  tsr_plugin_api api;
  std::memset(&api, 0, sizeof(api));
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
  api.stream_create = StreamCreate;
  api.stream_destroy = StreamDestroy;
  api.stream_synchronize = StreamSynchronize;
  api.stream_query = StreamQuery;
  api.event_create = EventCreate;
  api.event_destroy = EventDestroy;
  api.event_record = EventRecord;
  api.stream_wait_event = StreamWaitEvent;
  api.event_synchronize = EventSynchronize;
  api.event_query = EventQuery;
  api.copy_host_to_device = CopyHostToDevice;
  api.copy_device_to_host = CopyDeviceToHost;
  api.copy_device_to_device = CopyDeviceToDevice;
  api.memset = Memset;
  api.list_ops = ListOps;
  api.resolve_op = ResolveOp;
  api.launch = Launch;
  api.comm = nullptr;   // optional: no collectives
  api.graph = nullptr;  // optional: no graph capture
  // stream_busy_ns (1.1) and memory_stats (1.7) are optional too: left NULL.
  return api;
}

const tsr_plugin_api kApi = MakeApi();

}  // namespace

extern "C" TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  g_host = host;
  return &kApi;
}
