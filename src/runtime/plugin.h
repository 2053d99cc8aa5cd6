// Plugin: the one wrapper through which Tessera calls a device plugin.
//
// The engine never touches a raw tsr_plugin_api table: every call goes
// through this class, which
//   - converts each tsr_status into a Status (PluginLibrary::Check), so the
//     message names the plugin, the call and the plugin's last_error();
//   - applies the documented default of every optional (NULL-able) entry in
//     one place: no comm table -> collectives fail with Unavailable
//     ("plugin X has no collectives"); no graph table -> Unimplemented;
//     an entry past the plugin's struct_size counts as NULL;
//   - reads plugin-filled arrays with the plugin's own struct_size as the
//     stride, so a newer minor that appended fields still reads correctly;
//   - accounts every allocation (MemoryAccounting).
// Handles come back raw (tsr_stream, tsr_buffer, ...); the RAII types in
// buffer.h, stream.h, device.h and communicator.h own them and are what the
// engine holds.
//
// Lifetime: Init() once, then any calls, then Shutdown() (or the destructor).
// Every handle must be released before Shutdown. The Plugin must outlive all
// RAII objects made from it.
// Thread-safety: after Init() every const and handle method may be called
// from any thread (the ABI's rule 5); Init/Shutdown are not thread-safe.
#ifndef TESSERA_RUNTIME_PLUGIN_H_
#define TESSERA_RUNTIME_PLUGIN_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/memory_stats.h"
#include "runtime/plugin_library.h"
#include "runtime/runtime_config.h"
#include "tessera/plugin/tessera_plugin.h"

namespace tessera::runtime {

// What init receives: key=value options and the visible-device filter.
struct PluginInitArgs {
  std::vector<PluginOption> options;
  // nullopt: all devices; otherwise these physical indices, in order.
  std::optional<std::vector<int32_t>> visible_devices;
};

// One buffer_alloc result with what buffer_info reported about it.
struct RawAllocation {
  tsr_buffer handle = nullptr;
  int32_t device = 0;
  tsr_mem_kind kind = TSR_MEM_DEVICE;
  uint64_t size = 0;             // bytes asked of the plugin
  uint64_t reserved_size = 0;    // bytes the plugin reserved (>= size)
  void* host_pointer = nullptr;  // host address, or nullptr
  // The device-side address (ABI 1.7); 0 when unknown or not flat.
  uint64_t device_address = 0;
};

// One device's memory as doctor and /metrics show it.
struct DeviceMemoryFigures {
  bool from_plugin = false;  // memory_stats (1.7); else the host's own count
  uint64_t in_use_bytes = 0;
  uint64_t peak_bytes = 0;
  uint64_t limit_bytes = 0;  // 0: unknown
};

class Plugin {
 public:
  explicit Plugin(std::unique_ptr<PluginLibrary> library);
  ~Plugin();  // Shutdown() when initialised; errors are logged.
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  // --- identity (valid before Init) ---
  const std::string& name() const { return library_->name(); }
  const std::string& path() const { return library_->path(); }
  std::string AbiVersion() const { return library_->AbiVersion(); }
  const tsr_plugin_manifest& manifest() const { return *api().manifest; }
  const PluginLibrary& library() const { return *library_; }
  // The manifest's string fields, "" when NULL.
  std::string Version() const;
  std::string Description() const;
  std::string Requirements() const;
  // The probe score (0: hardware absent). Cheap; valid before Init.
  int32_t Probe() const;
  // last_error() right now: the reason a probe returned 0, if the plugin
  // set one.
  std::string LastError() const { return library_->LastError(); }

  // --- lifecycle ---
  Status Init(const PluginInitArgs& args);
  Status Shutdown();
  bool initialized() const { return initialized_; }

  // --- capabilities (the manifest bit and the table agree) ---
  bool HasCollectives() const { return comm_ != nullptr; }
  // Ranks in different processes (ABI 1.3 comm_get_unique_id and
  // comm_init_rank present).
  bool HasCrossProcessCollectives() const;
  bool HasGraphs() const { return graph_ != nullptr; }
  bool SupportsPinnedHost() const;
  bool DeviceMemoryIsHostVisible() const;

  // --- devices ---
  StatusOr<int32_t> DeviceCount() const;
  StatusOr<tsr_device_properties> DeviceProperties(int32_t device) const;

  // --- memory (raw; Device and CachingAllocator wrap these) ---
  StatusOr<RawAllocation> Allocate(int32_t device, tsr_mem_kind kind,
                                   uint64_t size, uint64_t alignment);
  Status Free(const RawAllocation& allocation);
  // The plugin's own figures for `device` (ABI 1.7 memory_stats); nullopt
  // when the plugin does not report them.
  StatusOr<std::optional<tsr_memory_stats>> DeviceMemoryStats(
      int32_t device) const;
  // memory_stats when the plugin has it; otherwise the bytes the host
  // reserved there through Allocate (current and peak) and memory_total.
  StatusOr<DeviceMemoryFigures> MemoryFigures(int32_t device) const;
  MemoryAccounting& accounting() { return accounting_; }
  const MemoryAccounting& accounting() const { return accounting_; }

  // --- streams and events (raw; Stream and Event wrap these) ---
  StatusOr<tsr_stream> CreateStream(int32_t device);
  Status DestroyStream(tsr_stream stream);
  Status SynchronizeStream(tsr_stream stream);
  // true when idle, false while work is pending, or the sticky error.
  StatusOr<bool> QueryStream(tsr_stream stream);
  // Nanoseconds the stream has spent running finished work (ABI 1.1
  // stream_busy_ns); nullopt when the plugin does not report it.
  StatusOr<std::optional<uint64_t>> StreamBusyNs(tsr_stream stream);
  StatusOr<tsr_event> CreateEvent(int32_t device);
  Status DestroyEvent(tsr_event event);
  Status RecordEvent(tsr_event event, tsr_stream stream);
  Status StreamWaitEvent(tsr_stream stream, tsr_event event);
  Status SynchronizeEvent(tsr_event event);
  StatusOr<bool> QueryEvent(tsr_event event);

  // --- copies: stream == nullptr means synchronous ---
  Status CopyHostToDevice(tsr_stream stream, tsr_buffer dst,
                          uint64_t dst_offset, const void* src, uint64_t size);
  Status CopyDeviceToHost(tsr_stream stream, void* dst, tsr_buffer src,
                          uint64_t src_offset, uint64_t size);
  Status CopyDeviceToDevice(tsr_stream stream, tsr_buffer dst,
                            uint64_t dst_offset, tsr_buffer src,
                            uint64_t src_offset, uint64_t size);
  Status Memset(tsr_stream stream, tsr_buffer dst, uint64_t offset,
                uint8_t value, uint64_t size);

  // --- ops ---
  // The op table list_ops returned at Init (copied; empty before Init).
  const std::vector<tsr_op_signature>& ops() const { return ops_; }
  // Whether the table lists exactly this (op, version, dtypes).
  bool ListsSignature(const tsr_op_signature& signature) const;
  // Whether the table lists `op` with any version and dtypes.
  bool ListsOp(tsr_op_id op) const;
  // NotFound when the plugin lacks the signature.
  StatusOr<tsr_kernel> ResolveOp(int32_t device,
                                 const tsr_op_signature& signature);
  Status Launch(tsr_kernel kernel, tsr_stream stream,
                std::span<const tsr_tensor> inputs,
                std::span<const tsr_tensor> outputs, const void* params,
                size_t params_size);

  // --- collectives (optional: Unavailable when the plugin has none) ---
  StatusOr<std::vector<tsr_comm>> CommInitAll(std::span<const int32_t> devices);
  Status CommDestroy(tsr_comm comm);
  Status AllReduce(tsr_comm comm, tsr_stream stream, const tsr_tensor& send,
                   const tsr_tensor& recv, tsr_reduce_op op);
  Status AllGather(tsr_comm comm, tsr_stream stream, const tsr_tensor& send,
                   const tsr_tensor& recv);
  Status Broadcast(tsr_comm comm, tsr_stream stream, const tsr_tensor& buffer,
                   int32_t root);
  Status Send(tsr_comm comm, tsr_stream stream, const tsr_tensor& tensor,
              int32_t peer);
  Status Recv(tsr_comm comm, tsr_stream stream, const tsr_tensor& tensor,
              int32_t peer);
  // ABI 1.3; Unavailable (naming the plugin's ABI) when absent.
  StatusOr<tsr_comm_unique_id> CommGetUniqueId();
  StatusOr<tsr_comm> CommInitRank(const tsr_comm_unique_id& id,
                                  int32_t num_ranks, int32_t rank,
                                  int32_t device, int32_t node,
                                  int32_t num_nodes);
  Status ReduceScatter(tsr_comm comm, tsr_stream stream,
                       const tsr_tensor& send, const tsr_tensor& recv,
                       tsr_reduce_op op);

  // --- graphs (optional: Unimplemented when the plugin has none) ---
  Status BeginCapture(tsr_stream stream);
  StatusOr<tsr_graph> EndCapture(tsr_stream stream);
  Status LaunchGraph(tsr_graph graph, tsr_stream stream);
  Status DestroyGraph(tsr_graph graph);

 private:
  const tsr_plugin_api& api() const { return library_->api(); }
  Status Check(tsr_status status, const char* what) const {
    return library_->Check(status, what);
  }
  Status RequireInit(const char* what) const;
  Status NoCollectives(const char* what) const;
  Status NoCrossProcessCollectives(const char* what) const;
  Status NoGraphs(const char* what) const;

  std::unique_ptr<PluginLibrary> library_;
  const tsr_comm_api* comm_ = nullptr;    // NULL or past struct_size: absent
  const tsr_graph_api* graph_ = nullptr;  // likewise
  bool initialized_ = false;
  std::vector<tsr_op_signature> ops_;
  MemoryAccounting accounting_;
};

// A signature for `op` version `version` over `dtypes` (inputs then outputs).
tsr_op_signature MakeSignature(tsr_op_id op, uint32_t version,
                               std::span<const tsr_dtype> dtypes);
// "rms_norm v1 (f32, f32 -> f32)"-style text; `num_inputs` places the arrow
// (-1: no arrow).
std::string SignatureToString(const tsr_op_signature& signature,
                              int num_inputs = -1);
bool SameSignature(const tsr_op_signature& a, const tsr_op_signature& b);

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_PLUGIN_H_
