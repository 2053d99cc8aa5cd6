// libFuzzer harness: a device plugin's table as the runtime reads it. The
// input is the plugin: the table's header (ABI major/minor, struct_size),
// which entries are NULL, the manifest (its struct_size, strings,
// capabilities), the optional comm and graph sub-tables and their sizes, and
// every answer an entry gives (statuses, last_error text, probe score, device
// count, device properties, the list_ops array with its own entry stride,
// buffer info, handles). The runtime then does what loading does: validate
// the table (PluginLibrary::FromTable), inspect the candidate (probe,
// manifest, requirements), init (options, list_ops), open devices,
// allocate, create streams and events, build the op dispatcher and resolve
// each listed op, shut down.
//
// Every table, manifest, sub-table and op array is allocated with exactly
// the size it declares, so AddressSanitizer reports any read the runtime
// makes past a struct_size. Input that is spent reads as zeros: an empty
// input is an honest plugin whose every entry answers TSR_OK.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device.h"
#include "runtime/op_dispatcher.h"
#include "runtime/plugin.h"
#include "runtime/plugin_discovery.h"
#include "runtime/stream.h"
#include "tessera/plugin/tessera_plugin.h"

namespace {

using namespace tessera::runtime;  // NOLINT: a harness, one namespace used

FuzzedDataProvider* g_in = nullptr;
uintptr_t g_next_handle = 0x1000;
thread_local std::string g_last_error;
// Memory the fake hands out as host pointers and op arrays: freed per input.
std::vector<std::unique_ptr<unsigned char[]>> g_owned;

unsigned char* Own(size_t bytes) {
  g_owned.push_back(std::make_unique<unsigned char[]>(std::max<size_t>(bytes, 1)));
  return g_owned.back().get();
}

// Mostly OK; sometimes any status, including values the ABI does not define.
tsr_status Answer() {
  const uint8_t r = g_in->ConsumeIntegral<uint8_t>();
  if (r < 200) return TSR_OK;
  static constexpr int32_t kStatuses[] = {
      TSR_ERR_INVALID_ARGUMENT, TSR_ERR_INVALID_HANDLE, TSR_ERR_OUT_OF_MEMORY,
      TSR_ERR_UNSUPPORTED,      TSR_ERR_NOT_FOUND,      TSR_ERR_DEVICE,
      TSR_ERR_NOT_READY,        TSR_ERR_INTERNAL,       -1,
      9999};
  return static_cast<tsr_status>(kStatuses[r % std::size(kStatuses)]);
}

template <typename Handle>
Handle NewHandle() {
  // Occasionally NULL with TSR_OK: a broken plugin the runtime must survive.
  if (g_in->ConsumeIntegral<uint8_t>() == 255) return nullptr;
  return reinterpret_cast<Handle>(g_next_handle += 16);
}

// --- the entries ---------------------------------------------------------

const char* LastError() {
  if (g_in->ConsumeIntegral<uint8_t>() == 255) return nullptr;  // breaks rule 2
  g_last_error = g_in->ConsumeRandomLengthString(96);
  return g_last_error.c_str();
}
int32_t Probe() { return g_in->ConsumeIntegral<int32_t>(); }
tsr_status Init(const tsr_init_args*) { return Answer(); }
tsr_status Shutdown() { return Answer(); }
tsr_status DeviceCount(int32_t* count) {
  *count = g_in->ConsumeIntegral<int32_t>();
  return Answer();
}
tsr_status DeviceProperties(int32_t, tsr_device_properties* props) {
  // The plugin writes up to the caller's struct_size, any bytes at all.
  const std::string bytes = g_in->ConsumeBytesAsString(
      std::min<size_t>(props->struct_size, sizeof(*props)));
  std::memcpy(props, bytes.data(), bytes.size());
  return Answer();
}
tsr_status BufferAlloc(int32_t, tsr_mem_kind, uint64_t, uint64_t,
                       tsr_buffer* out) {
  *out = NewHandle<tsr_buffer>();
  return Answer();
}
tsr_status BufferFree(tsr_buffer) { return Answer(); }
tsr_status BufferInfo(tsr_buffer, tsr_buffer_info* info) {
  info->device = g_in->ConsumeIntegral<int32_t>();
  info->kind = g_in->ConsumeIntegral<int32_t>();
  info->size = g_in->ConsumeIntegral<uint64_t>();
  info->reserved_size = g_in->ConsumeIntegral<uint64_t>();
  // A host pointer is real memory of the reserved size (bounded here).
  info->host_pointer = nullptr;
  if (g_in->ConsumeBool()) {
    info->reserved_size = g_in->ConsumeIntegralInRange<uint64_t>(0, 1 << 16);
    info->host_pointer = Own(info->reserved_size);
  }
  // Since 1.7, when the host's struct has room (it always does here).
  if (info->struct_size >= sizeof(tsr_buffer_info)) {
    info->device_address = g_in->ConsumeIntegral<uint64_t>();
  }
  return Answer();
}
tsr_status StreamCreate(int32_t, tsr_stream* out) {
  *out = NewHandle<tsr_stream>();
  return Answer();
}
tsr_status StreamOp(tsr_stream) { return Answer(); }
tsr_status EventCreate(int32_t, tsr_event* out) {
  *out = NewHandle<tsr_event>();
  return Answer();
}
tsr_status EventOp(tsr_event) { return Answer(); }
tsr_status EventRecord(tsr_event, tsr_stream) { return Answer(); }
tsr_status StreamWaitEvent(tsr_stream, tsr_event) { return Answer(); }
tsr_status CopyH2D(tsr_stream, tsr_buffer, uint64_t, const void*, uint64_t) {
  return Answer();
}
tsr_status CopyD2H(tsr_stream, void*, tsr_buffer, uint64_t, uint64_t) {
  return Answer();
}
tsr_status CopyD2D(tsr_stream, tsr_buffer, uint64_t, tsr_buffer, uint64_t,
                   uint64_t) {
  return Answer();
}
tsr_status Memset(tsr_stream, tsr_buffer, uint64_t, uint8_t, uint64_t) {
  return Answer();
}
tsr_status ListOps(const tsr_op_signature** ops_out, size_t* count_out) {
  // An array of `count` entries `stride` bytes apart, each entry's bytes
  // from the input. An honest plugin declares the stride as every entry's
  // struct_size; a broken one declares another size for some entry, or for
  // entry 0 a size no signature can have (a plausible wrong size for entry
  // 0 would make any reader overrun: nothing can tell it from the truth).
  const size_t count = g_in->ConsumeIntegralInRange<size_t>(0, 40);
  const size_t stride = g_in->ConsumeBool()
                            ? sizeof(tsr_op_signature)
                            : g_in->ConsumeIntegralInRange<size_t>(4, 512);
  unsigned char* array = Own(count * stride);
  for (size_t i = 0; i < count; ++i) {
    const std::string bytes = g_in->ConsumeBytesAsString(stride);
    std::memcpy(array + i * stride, bytes.data(), bytes.size());
    uint32_t declared = static_cast<uint32_t>(stride);
    if (g_in->ConsumeIntegralInRange<int>(0, 15) == 15) {
      declared = g_in->ConsumeIntegral<uint32_t>();
      if (i == 0 && declared >= sizeof(tsr_op_signature) && declared <= 4096) {
        declared = 4097 + declared;
      }
    }
    if (stride >= sizeof(declared)) {
      std::memcpy(array + i * stride, &declared, sizeof(declared));
    }
  }
  *ops_out = g_in->ConsumeIntegral<uint8_t>() == 255
                 ? nullptr
                 : reinterpret_cast<const tsr_op_signature*>(array);
  *count_out = g_in->ConsumeIntegral<uint8_t>() == 255
                   ? g_in->ConsumeIntegral<size_t>() % (count + 1)
                   : count;
  return Answer();
}
tsr_status ResolveOp(int32_t, const tsr_op_signature*, tsr_kernel* out) {
  *out = NewHandle<tsr_kernel>();
  return Answer();
}
tsr_status Launch(tsr_kernel, tsr_stream, const tsr_tensor*, size_t,
                  const tsr_tensor*, size_t, const void*, size_t) {
  return Answer();
}
tsr_status StreamBusyNs(tsr_stream, uint64_t* ns) {
  *ns = g_in->ConsumeIntegral<uint64_t>();
  return Answer();
}
tsr_status MemoryStats(int32_t, tsr_memory_stats* stats) {
  stats->bytes_in_use = g_in->ConsumeIntegral<uint64_t>();
  stats->peak_bytes_in_use = g_in->ConsumeIntegral<uint64_t>();
  stats->bytes_limit = g_in->ConsumeIntegral<uint64_t>();
  return Answer();
}
tsr_status CommInitAll(const int32_t*, int32_t, tsr_comm*) { return Answer(); }
tsr_status CommDestroy(tsr_comm) { return Answer(); }
tsr_status CommGetUniqueId(tsr_comm_unique_id*) { return Answer(); }
tsr_status GraphBegin(tsr_stream) { return Answer(); }
tsr_status GraphEnd(tsr_stream, tsr_graph* out) {
  *out = NewHandle<tsr_graph>();
  return Answer();
}
tsr_status GraphLaunch(tsr_graph, tsr_stream) { return Answer(); }
tsr_status GraphDestroy(tsr_graph) { return Answer(); }

// --- the tables ----------------------------------------------------------

// A copy of `full` in a block of exactly the size the struct declares
// (at least `min_bytes`, the header read before the size can be checked,
// and at most the whole struct: the runtime knows no more fields).
template <typename Table>
const Table* ExactCopy(Table full, size_t min_bytes) {
  const size_t bytes =
      std::clamp<size_t>(full.struct_size, min_bytes, sizeof(Table));
  unsigned char* block = Own(bytes);
  std::memcpy(block, &full, bytes);
  return reinterpret_cast<const Table*>(block);
}

// A struct_size: usually the real one, else a nearby or any value.
uint32_t DeclaredSize(size_t real) {
  switch (g_in->ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
    case 1:
      return static_cast<uint32_t>(real);
    case 2:
      return static_cast<uint32_t>(
          g_in->ConsumeIntegralInRange<size_t>(0, real + 64));
    default:
      return g_in->ConsumeIntegral<uint32_t>();
  }
}

// A field the input may blank: required entries NULL, optional ones absent.
template <typename Fn>
Fn Maybe(Fn fn) {
  return g_in->ConsumeIntegralInRange<int>(0, 15) == 15 ? nullptr : fn;
}

const char* MaybeString() {
  if (g_in->ConsumeIntegralInRange<int>(0, 7) == 7) return nullptr;
  const std::string text = g_in->ConsumeRandomLengthString(64);
  char* copy = reinterpret_cast<char*>(Own(text.size() + 1));
  std::memcpy(copy, text.c_str(), text.size() + 1);
  return copy;
}

const tsr_plugin_api* BuildTable() {
  tsr_plugin_manifest manifest{};
  manifest.struct_size = DeclaredSize(sizeof(manifest));
  manifest.name = MaybeString();
  manifest.version = MaybeString();
  manifest.description = MaybeString();
  manifest.abi_major = g_in->ConsumeIntegral<uint32_t>();
  manifest.abi_minor = g_in->ConsumeIntegral<uint32_t>();
  manifest.min_host_abi_minor = g_in->ConsumeIntegral<uint32_t>();
  manifest.requirements = MaybeString();
  manifest.capabilities = g_in->ConsumeIntegral<uint64_t>();

  tsr_comm_api comm{};
  comm.struct_size = DeclaredSize(sizeof(comm));
  comm.comm_init_all = Maybe(&CommInitAll);
  comm.comm_destroy = Maybe(&CommDestroy);
  comm.comm_get_unique_id = Maybe(&CommGetUniqueId);
  comm.comm_init_rank = nullptr;  // never called: presence is what is read
  if (g_in->ConsumeBool()) {
    comm.comm_init_rank = reinterpret_cast<decltype(comm.comm_init_rank)>(
        reinterpret_cast<void*>(&CommDestroy));
  }

  tsr_graph_api graph{};
  graph.struct_size = DeclaredSize(sizeof(graph));
  graph.begin_capture = Maybe(&GraphBegin);
  graph.end_capture = Maybe(&GraphEnd);
  graph.launch = Maybe(&GraphLaunch);
  graph.destroy = Maybe(&GraphDestroy);

  tsr_plugin_api api{};
  const bool honest_version = g_in->ConsumeIntegralInRange<int>(0, 7) != 7;
  api.abi_major = honest_version ? TSR_PLUGIN_ABI_MAJOR
                                 : g_in->ConsumeIntegral<uint32_t>();
  api.abi_minor = honest_version
                      ? g_in->ConsumeIntegralInRange<uint32_t>(
                            0, TSR_PLUGIN_ABI_MINOR + 1)
                      : g_in->ConsumeIntegral<uint32_t>();
  api.struct_size = DeclaredSize(sizeof(api));
  api.manifest = g_in->ConsumeIntegralInRange<int>(0, 31) == 31
                     ? nullptr
                     : ExactCopy(manifest, sizeof(uint32_t));
  api.last_error = Maybe(&LastError);
  api.probe = Maybe(&Probe);
  api.init = Maybe(&Init);
  api.shutdown = Maybe(&Shutdown);
  api.device_count = Maybe(&DeviceCount);
  api.device_properties = Maybe(&DeviceProperties);
  api.buffer_alloc = Maybe(&BufferAlloc);
  api.buffer_free = Maybe(&BufferFree);
  api.buffer_info = Maybe(&BufferInfo);
  api.stream_create = Maybe(&StreamCreate);
  api.stream_destroy = Maybe(&StreamOp);
  api.stream_synchronize = Maybe(&StreamOp);
  api.stream_query = Maybe(&StreamOp);
  api.event_create = Maybe(&EventCreate);
  api.event_destroy = Maybe(&EventOp);
  api.event_record = Maybe(&EventRecord);
  api.stream_wait_event = Maybe(&StreamWaitEvent);
  api.event_synchronize = Maybe(&EventOp);
  api.event_query = Maybe(&EventOp);
  api.copy_host_to_device = Maybe(&CopyH2D);
  api.copy_device_to_host = Maybe(&CopyD2H);
  api.copy_device_to_device = Maybe(&CopyD2D);
  api.memset = Maybe(&Memset);
  api.list_ops = Maybe(&ListOps);
  api.resolve_op = Maybe(&ResolveOp);
  api.launch = Maybe(&Launch);
  api.comm = g_in->ConsumeBool() ? ExactCopy(comm, sizeof(uint32_t)) : nullptr;
  api.graph = g_in->ConsumeBool() ? ExactCopy(graph, sizeof(uint32_t)) : nullptr;
  api.stream_busy_ns = Maybe(&StreamBusyNs);
  api.memory_stats = Maybe(&MemoryStats);
  // The header (struct_size, abi_major, abi_minor) is read before the size
  // is checked.
  return ExactCopy(api, offsetof(tsr_plugin_api, reserved0));
}

// --- what loading does ---------------------------------------------------

void UseDevice(Device& device, OpDispatcher& dispatcher, Plugin& plugin) {
  (void)device.Label();
  if (auto stream = device.CreateStream(); stream.ok()) {
    (void)(*stream)->Synchronize();
    if (auto event = device.CreateEvent(); event.ok()) {
      (void)(*event)->Record(**stream);
      (void)(*event)->Synchronize();
    }
  }
  const uint64_t bytes = g_in->ConsumeIntegralInRange<uint64_t>(0, 1 << 20);
  if (auto buffer = device.Allocate(bytes, TSR_MEM_DEVICE); buffer.ok()) {
    (void)(*buffer)->size();
  }
  (void)device.AllocateUncached(bytes, TSR_MEM_PINNED_HOST, 64);
  (void)device.Trim();
  (void)plugin.MemoryFigures(device.ordinal());  // doctor, /metrics
  size_t resolved = 0;
  for (const tsr_op_signature& sig : plugin.ops()) {
    (void)dispatcher.Coverage(sig.op);
    (void)dispatcher.Resolve(device.ordinal(), sig);
    if (++resolved == 16) break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  g_in = &in;
  g_owned.clear();
  {
    const tsr_plugin_api* table = BuildTable();
    LoadedCandidate loaded =
        LoadCandidateFromTable(table, "/plugins/libtessera_plugin_fuzz.so");
    if (loaded.plugin != nullptr) {
      Plugin& plugin = *loaded.plugin;
      (void)plugin.HasCrossProcessCollectives();
      (void)plugin.HasGraphs();
      (void)plugin.SupportsPinnedHost();
      PluginInitArgs args;
      if (in.ConsumeBool()) {
        args.options.push_back({in.ConsumeRandomLengthString(16),
                                in.ConsumeRandomLengthString(16), "fuzz"});
      }
      if (plugin.Init(args).ok()) {
        std::vector<DevicePtr> devices;
        if (auto count = plugin.DeviceCount(); count.ok()) {
          for (int32_t i = 0; i < std::min<int32_t>(*count, 3); ++i) {
            if (auto device = Device::Open(plugin, i); device.ok()) {
              devices.push_back(std::move(*device));
            }
          }
        }
        {
          OpDispatcher dispatcher(plugin, plugin,
                                  devices.empty() ? nullptr : devices[0].get(),
                                  OpDispatcherOptions{});
          for (DevicePtr& device : devices) UseDevice(*device, dispatcher, plugin);
        }
        devices.clear();
        (void)plugin.Shutdown();
      }
    }
  }
  g_in = nullptr;
  return 0;
}
