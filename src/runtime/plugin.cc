#include "runtime/plugin.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "base/dtype.h"
#include "base/logging.h"
#include "runtime/op_names.h"

namespace tessera::runtime {
namespace {

// True when `table` is non-NULL, its struct_size covers `field` and the
// field is non-NULL: the one test for "this optional entry exists".
#define TSR_ENTRY_PRESENT(table, field)                                   \
  ((table) != nullptr &&                                                  \
   (table)->struct_size >=                                                \
       offsetof(std::remove_cv_t<std::remove_pointer_t<decltype(table)>>, \
                field) +                                                  \
           sizeof((table)->field) &&                                      \
   (table)->field != nullptr)

// Bounds on list_ops' answer: an entry stride no ABI 1.x signature reaches
// (a v1 signature is under 100 bytes) and more ops than any table lists.
constexpr size_t kMaxSignatureStride = 4096;
constexpr size_t kMaxListedOps = 1 << 16;

}  // namespace

tsr_op_signature MakeSignature(tsr_op_id op, uint32_t version,
                               std::span<const tsr_dtype> dtypes) {
  tsr_op_signature sig{};
  sig.struct_size = sizeof(tsr_op_signature);
  sig.op = op;
  sig.version = version;
  sig.num_args =
      static_cast<uint32_t>(std::min<size_t>(dtypes.size(), TSR_MAX_OP_ARGS));
  for (uint32_t i = 0; i < sig.num_args; ++i) sig.dtypes[i] = dtypes[i];
  return sig;
}

std::string SignatureToString(const tsr_op_signature& sig, int num_inputs) {
  std::string args;
  for (uint32_t i = 0; i < sig.num_args && i < TSR_MAX_OP_ARGS; ++i) {
    if (i > 0) args += (static_cast<int>(i) == num_inputs) ? " -> " : ", ";
    args += DTypeName(sig.dtypes[i]);
  }
  return fmt::format("{} v{} ({})", OpName(sig.op), sig.version, args);
}

bool SameSignature(const tsr_op_signature& a, const tsr_op_signature& b) {
  if (a.op != b.op || a.version != b.version || a.num_args != b.num_args) {
    return false;
  }
  for (uint32_t i = 0; i < a.num_args && i < TSR_MAX_OP_ARGS; ++i) {
    if (a.dtypes[i] != b.dtypes[i]) return false;
  }
  return true;
}

Plugin::Plugin(std::unique_ptr<PluginLibrary> library)
    : library_(std::move(library)) {
  const tsr_plugin_api* table = &api();
  // A sub-table is used only when it has every v1.0 entry (the host calls
  // them without further checks); an incomplete one is turned off, named.
  // `missing` becomes the first v1.0 entry the table lacks.
  const char* missing = nullptr;
#define TSR_NEED_ENTRY(sub, field) \
  if (missing == nullptr && !TSR_ENTRY_PRESENT(sub, field)) missing = #field;
  auto use = [&](const char* what, auto* sub, auto*& member) {
    if (missing == nullptr) {
      member = sub;
    } else {
      TSR_LOG_WARN(
          "{} plugin: its {} table leaves '{}' NULL (or its struct_size does "
          "not cover it); {} are off — fix the plugin's table",
          name(), what, missing, what);
    }
  };
  if (TSR_ENTRY_PRESENT(table, comm)) {
    const tsr_comm_api* comm = table->comm;
    TSR_NEED_ENTRY(comm, comm_init_all)
    TSR_NEED_ENTRY(comm, comm_destroy)
    TSR_NEED_ENTRY(comm, all_reduce)
    TSR_NEED_ENTRY(comm, all_gather)
    TSR_NEED_ENTRY(comm, broadcast)
    TSR_NEED_ENTRY(comm, send)
    TSR_NEED_ENTRY(comm, recv)
    use("collectives", comm, comm_);
  }
  missing = nullptr;
  if (TSR_ENTRY_PRESENT(table, graph)) {
    const tsr_graph_api* graph = table->graph;
    TSR_NEED_ENTRY(graph, begin_capture)
    TSR_NEED_ENTRY(graph, end_capture)
    TSR_NEED_ENTRY(graph, launch)
    TSR_NEED_ENTRY(graph, destroy)
    use("graphs", graph, graph_);
  }
#undef TSR_NEED_ENTRY
}

Plugin::~Plugin() {
  if (initialized_) {
    Status s = Shutdown();
    if (!s.ok()) TSR_LOG_ERROR("{}", s.message());
  }
}

std::string Plugin::Version() const { return PluginText(manifest().version, 64); }
std::string Plugin::Description() const {
  return PluginText(manifest().description, 512);
}
std::string Plugin::Requirements() const {
  return PluginText(manifest().requirements, 1024);
}

int32_t Plugin::Probe() const { return api().probe(); }

bool Plugin::SupportsPinnedHost() const {
  return (manifest().capabilities & TSR_CAP_PINNED_HOST) != 0;
}
bool Plugin::DeviceMemoryIsHostVisible() const {
  return (manifest().capabilities & TSR_CAP_HOST_VISIBLE_DEVICE_MEM) != 0;
}

Status Plugin::RequireInit(const char* what) const {
  if (initialized_) return OkStatus();
  return FailedPreconditionError(fmt::format(
      "{} plugin: {} called before init (or after shutdown); this is a bug "
      "in the caller",
      name(), what));
}

Status Plugin::NoCollectives(const char* what) const {
  return UnavailableError(fmt::format(
      "{} plugin has no collectives ({} unavailable); run one rank per "
      "process or choose a plugin with TSR_CAP_COLLECTIVES",
      name(), what));
}

bool Plugin::HasCrossProcessCollectives() const {
  return TSR_ENTRY_PRESENT(comm_, comm_get_unique_id) &&
         TSR_ENTRY_PRESENT(comm_, comm_init_rank);
}

Status Plugin::NoCrossProcessCollectives(const char* what) const {
  return UnavailableError(fmt::format(
      "{} plugin (ABI {}) has no collectives across processes ({} "
      "unavailable: its comm table lacks the ABI 1.3 entries "
      "comm_get_unique_id and comm_init_rank); run with --tp-size 1 or choose "
      "a plugin that has them",
      name(), AbiVersion(), what));
}

Status Plugin::NoGraphs(const char* what) const {
  return UnimplementedError(fmt::format(
      "{} plugin does not support graph capture ({}); run steps eagerly",
      name(), what));
}

Status Plugin::Init(const PluginInitArgs& args) {
  if (initialized_) {
    return FailedPreconditionError(
        fmt::format("{} plugin: init called twice", name()));
  }
  std::vector<tsr_option> options;
  options.reserve(args.options.size());
  for (const auto& o : args.options) {
    options.push_back({o.key.c_str(), o.value.c_str()});
  }
  tsr_init_args init{};
  init.struct_size = sizeof(init);
  init.options = options.empty() ? nullptr : options.data();
  init.num_options = options.size();
  if (args.visible_devices) {
    init.visible_devices =
        args.visible_devices->empty() ? nullptr : args.visible_devices->data();
    init.num_visible_devices =
        static_cast<int32_t>(args.visible_devices->size());
  } else {
    init.visible_devices = nullptr;
    init.num_visible_devices = -1;
  }
  Status s = Check(api().init(&init), "init");
  if (!s.ok()) {
    std::string sources;
    for (const auto& o : args.options) {
      sources += fmt::format("{}{}={} (from {})", sources.empty() ? "" : ", ",
                             o.key, o.value, o.source);
    }
    if (!sources.empty()) {
      return Status(s.code(), fmt::format("{}; options passed: {}", s.message(),
                                          sources));
    }
    return s;
  }
  initialized_ = true;

  const tsr_op_signature* table = nullptr;
  size_t count = 0;
  s = Check(api().list_ops(&table, &count), "list_ops");
  if (s.ok() && count > 0 && table == nullptr) {
    s = InternalError(fmt::format(
        "{} plugin: list_ops returned {} ops but a NULL table", name(), count));
  }
  // Entries are read with the plugin's struct_size as the stride.
  size_t stride = count > 0 && table ? table[0].struct_size : 0;
  if (s.ok() && count > 0 && stride < sizeof(tsr_op_signature)) {
    s = InternalError(fmt::format(
        "{} plugin: list_ops entries have struct_size {}, smaller than the {} "
        "bytes of a v1 tsr_op_signature; fix the plugin's op table",
        name(), stride, sizeof(tsr_op_signature)));
  }
  // A stride far beyond any signature this major can grow to is garbage:
  // reading `count` entries with it would run off the plugin's array.
  if (s.ok() && count > 0 && stride > kMaxSignatureStride) {
    s = InternalError(fmt::format(
        "{} plugin: list_ops entries have struct_size {}, more than the {} "
        "bytes any ABI {}.x tsr_op_signature may have; the op table is "
        "corrupt",
        name(), stride, kMaxSignatureStride, TSR_PLUGIN_ABI_MAJOR));
  }
  if (s.ok() && count > kMaxListedOps) {
    s = InternalError(fmt::format(
        "{} plugin: list_ops returned {} ops, more than the {} the host "
        "accepts; the op table is corrupt",
        name(), count, kMaxListedOps));
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(table);
  for (size_t i = 1; s.ok() && i < count; ++i) {
    uint32_t size = 0;  // each entry starts with its struct_size
    std::memcpy(&size, bytes + i * stride, sizeof(size));
    if (size != stride) {
      s = InternalError(fmt::format(
          "{} plugin: list_ops entry {} has struct_size {}, entry 0 has {}; "
          "every entry of the op table must have the same size",
          name(), i, size, stride));
    }
  }
  if (!s.ok()) {
    Status down = Shutdown();
    (void)down;
    return s;
  }
  ops_.clear();
  for (size_t i = 0; i < count; ++i) {
    tsr_op_signature sig{};
    std::memcpy(&sig, bytes + i * stride, sizeof(sig));
    sig.struct_size = sizeof(sig);
    sig.num_args = std::min<uint32_t>(sig.num_args, TSR_MAX_OP_ARGS);
    ops_.push_back(sig);
  }
  return OkStatus();
}

Status Plugin::Shutdown() {
  if (!initialized_) return OkStatus();
  initialized_ = false;
  ops_.clear();
  return Check(api().shutdown(), "shutdown");
}

StatusOr<int32_t> Plugin::DeviceCount() const {
  TSR_RETURN_IF_ERROR(RequireInit("device_count"));
  int32_t count = 0;
  TSR_RETURN_IF_ERROR(Check(api().device_count(&count), "device_count"));
  if (count < 0) {
    return InternalError(fmt::format(
        "{} plugin: device_count returned {} devices", name(), count));
  }
  return count;
}

StatusOr<tsr_device_properties> Plugin::DeviceProperties(int32_t device) const {
  TSR_RETURN_IF_ERROR(RequireInit("device_properties"));
  tsr_device_properties props{};
  props.struct_size = sizeof(props);
  TSR_RETURN_IF_ERROR(
      Check(api().device_properties(device, &props), "device_properties"));
  props.name[sizeof(props.name) - 1] = '\0';
  props.vendor[sizeof(props.vendor) - 1] = '\0';
  props.driver_version[sizeof(props.driver_version) - 1] = '\0';
  return props;
}

StatusOr<RawAllocation> Plugin::Allocate(int32_t device, tsr_mem_kind kind,
                                         uint64_t size, uint64_t alignment) {
  TSR_RETURN_IF_ERROR(RequireInit("buffer_alloc"));
  tsr_buffer handle = nullptr;
  Status s = Check(api().buffer_alloc(device, kind, size, alignment, &handle),
                   "buffer_alloc");
  if (!s.ok()) {
    return Status(
        s.code(),
        fmt::format(
            "{} (device {}, {} bytes, {})", s.message(), device, size,
            kind == TSR_MEM_DEVICE ? "device memory" : "pinned host memory"));
  }
  tsr_buffer_info info{};
  info.struct_size = sizeof(info);
  s = Check(api().buffer_info(handle, &info), "buffer_info");
  if (!s.ok()) {
    api().buffer_free(handle);
    return s;
  }
  RawAllocation a;
  a.handle = handle;
  a.device = device;
  a.kind = kind;
  a.size = size;
  a.reserved_size = std::max(info.reserved_size, size);
  a.host_pointer = info.host_pointer;
  a.device_address = info.device_address;  // stays 0 from a pre-1.7 plugin
  accounting_.OnPluginAlloc(device, kind, a.reserved_size);
  return a;
}

Status Plugin::Free(const RawAllocation& allocation) {
  TSR_RETURN_IF_ERROR(RequireInit("buffer_free"));
  TSR_RETURN_IF_ERROR(
      Check(api().buffer_free(allocation.handle), "buffer_free"));
  accounting_.OnPluginFree(allocation.device, allocation.kind,
                           allocation.reserved_size);
  return OkStatus();
}

StatusOr<std::optional<tsr_memory_stats>> Plugin::DeviceMemoryStats(
    int32_t device) const {
  TSR_RETURN_IF_ERROR(RequireInit("memory_stats"));
  const tsr_plugin_api* table = &api();
  if (!TSR_ENTRY_PRESENT(table, memory_stats)) {
    return std::optional<tsr_memory_stats>();
  }
  tsr_memory_stats stats{};
  stats.struct_size = sizeof(stats);
  TSR_RETURN_IF_ERROR(Check(table->memory_stats(device, &stats), "memory_stats"));
  return std::optional<tsr_memory_stats>(stats);
}

StatusOr<DeviceMemoryFigures> Plugin::MemoryFigures(int32_t device) const {
  TSR_ASSIGN_OR_RETURN(std::optional<tsr_memory_stats> stats,
                       DeviceMemoryStats(device));
  DeviceMemoryFigures f;
  if (stats.has_value()) {
    f.from_plugin = true;
    f.in_use_bytes = stats->bytes_in_use;
    f.peak_bytes = stats->peak_bytes_in_use;
    f.limit_bytes = stats->bytes_limit;
    return f;
  }
  const MemoryStats host = accounting_.Get(device, TSR_MEM_DEVICE);
  f.in_use_bytes = host.reserved_bytes;
  f.peak_bytes = host.reserved_peak;
  TSR_ASSIGN_OR_RETURN(tsr_device_properties props, DeviceProperties(device));
  f.limit_bytes = props.memory_total;
  return f;
}

StatusOr<tsr_stream> Plugin::CreateStream(int32_t device) {
  TSR_RETURN_IF_ERROR(RequireInit("stream_create"));
  tsr_stream stream = nullptr;
  TSR_RETURN_IF_ERROR(
      Check(api().stream_create(device, &stream), "stream_create"));
  return stream;
}

Status Plugin::DestroyStream(tsr_stream stream) {
  TSR_RETURN_IF_ERROR(RequireInit("stream_destroy"));
  return Check(api().stream_destroy(stream), "stream_destroy");
}

Status Plugin::SynchronizeStream(tsr_stream stream) {
  return Check(api().stream_synchronize(stream), "stream_synchronize");
}

StatusOr<bool> Plugin::QueryStream(tsr_stream stream) {
  tsr_status s = api().stream_query(stream);
  if (s == TSR_ERR_NOT_READY) return false;
  TSR_RETURN_IF_ERROR(Check(s, "stream_query"));
  return true;
}

StatusOr<std::optional<uint64_t>> Plugin::StreamBusyNs(tsr_stream stream) {
  const tsr_plugin_api* table = &api();
  if (!TSR_ENTRY_PRESENT(table, stream_busy_ns)) return std::optional<uint64_t>();
  uint64_t ns = 0;
  TSR_RETURN_IF_ERROR(Check(table->stream_busy_ns(stream, &ns), "stream_busy_ns"));
  return std::optional<uint64_t>(ns);
}

StatusOr<tsr_event> Plugin::CreateEvent(int32_t device) {
  TSR_RETURN_IF_ERROR(RequireInit("event_create"));
  tsr_event event = nullptr;
  TSR_RETURN_IF_ERROR(
      Check(api().event_create(device, &event), "event_create"));
  return event;
}

Status Plugin::DestroyEvent(tsr_event event) {
  TSR_RETURN_IF_ERROR(RequireInit("event_destroy"));
  return Check(api().event_destroy(event), "event_destroy");
}

Status Plugin::RecordEvent(tsr_event event, tsr_stream stream) {
  return Check(api().event_record(event, stream), "event_record");
}

Status Plugin::StreamWaitEvent(tsr_stream stream, tsr_event event) {
  return Check(api().stream_wait_event(stream, event), "stream_wait_event");
}

Status Plugin::SynchronizeEvent(tsr_event event) {
  return Check(api().event_synchronize(event), "event_synchronize");
}

StatusOr<bool> Plugin::QueryEvent(tsr_event event) {
  tsr_status s = api().event_query(event);
  if (s == TSR_ERR_NOT_READY) return false;
  TSR_RETURN_IF_ERROR(Check(s, "event_query"));
  return true;
}

Status Plugin::CopyHostToDevice(tsr_stream stream, tsr_buffer dst,
                                uint64_t dst_offset, const void* src,
                                uint64_t size) {
  return Check(api().copy_host_to_device(stream, dst, dst_offset, src, size),
               "copy_host_to_device");
}

Status Plugin::CopyDeviceToHost(tsr_stream stream, void* dst, tsr_buffer src,
                                uint64_t src_offset, uint64_t size) {
  return Check(api().copy_device_to_host(stream, dst, src, src_offset, size),
               "copy_device_to_host");
}

Status Plugin::CopyDeviceToDevice(tsr_stream stream, tsr_buffer dst,
                                  uint64_t dst_offset, tsr_buffer src,
                                  uint64_t src_offset, uint64_t size) {
  return Check(api().copy_device_to_device(stream, dst, dst_offset, src,
                                           src_offset, size),
               "copy_device_to_device");
}

Status Plugin::Memset(tsr_stream stream, tsr_buffer dst, uint64_t offset,
                      uint8_t value, uint64_t size) {
  return Check(api().memset(stream, dst, offset, value, size), "memset");
}

bool Plugin::ListsSignature(const tsr_op_signature& signature) const {
  return std::any_of(ops_.begin(), ops_.end(), [&](const tsr_op_signature& s) {
    return SameSignature(s, signature);
  });
}

bool Plugin::ListsOp(tsr_op_id op) const {
  return std::any_of(ops_.begin(), ops_.end(),
                     [&](const tsr_op_signature& s) { return s.op == op; });
}

StatusOr<tsr_kernel> Plugin::ResolveOp(int32_t device,
                                       const tsr_op_signature& signature) {
  TSR_RETURN_IF_ERROR(RequireInit("resolve_op"));
  tsr_kernel kernel = nullptr;
  tsr_status s = api().resolve_op(device, &signature, &kernel);
  if (s == TSR_OK && kernel == nullptr) {
    return InternalError(
        fmt::format("{} plugin: resolve_op returned OK but no kernel for {}",
                    name(), SignatureToString(signature)));
  }
  TSR_RETURN_IF_ERROR(
      Check(s, "resolve_op").WithContext(SignatureToString(signature)));
  return kernel;
}

Status Plugin::Launch(tsr_kernel kernel, tsr_stream stream,
                      std::span<const tsr_tensor> inputs,
                      std::span<const tsr_tensor> outputs, const void* params,
                      size_t params_size) {
  return Check(
      api().launch(kernel, stream, inputs.data(), inputs.size(), outputs.data(),
                   outputs.size(), params, params_size),
      "launch");
}

StatusOr<std::vector<tsr_comm>> Plugin::CommInitAll(
    std::span<const int32_t> devices) {
  if (comm_ == nullptr) return NoCollectives("comm_init_all");
  TSR_RETURN_IF_ERROR(RequireInit("comm_init_all"));
  std::vector<tsr_comm> comms(devices.size(), nullptr);
  TSR_RETURN_IF_ERROR(Check(
      comm_->comm_init_all(devices.data(), static_cast<int32_t>(devices.size()),
                           comms.data()),
      "comm_init_all"));
  return comms;
}

Status Plugin::CommDestroy(tsr_comm comm) {
  if (!TSR_ENTRY_PRESENT(comm_, comm_destroy)) {
    return NoCollectives("comm_destroy");
  }
  return Check(comm_->comm_destroy(comm), "comm_destroy");
}

Status Plugin::AllReduce(tsr_comm comm, tsr_stream stream,
                         const tsr_tensor& send, const tsr_tensor& recv,
                         tsr_reduce_op op) {
  if (!TSR_ENTRY_PRESENT(comm_, all_reduce)) return NoCollectives("all_reduce");
  return Check(comm_->all_reduce(comm, stream, &send, &recv, op), "all_reduce");
}

Status Plugin::AllGather(tsr_comm comm, tsr_stream stream,
                         const tsr_tensor& send, const tsr_tensor& recv) {
  if (!TSR_ENTRY_PRESENT(comm_, all_gather)) return NoCollectives("all_gather");
  return Check(comm_->all_gather(comm, stream, &send, &recv), "all_gather");
}

Status Plugin::Broadcast(tsr_comm comm, tsr_stream stream,
                         const tsr_tensor& buffer, int32_t root) {
  if (!TSR_ENTRY_PRESENT(comm_, broadcast)) return NoCollectives("broadcast");
  return Check(comm_->broadcast(comm, stream, &buffer, root), "broadcast");
}

Status Plugin::Send(tsr_comm comm, tsr_stream stream, const tsr_tensor& tensor,
                    int32_t peer) {
  if (!TSR_ENTRY_PRESENT(comm_, send)) return NoCollectives("send");
  return Check(comm_->send(comm, stream, &tensor, peer), "send");
}

Status Plugin::Recv(tsr_comm comm, tsr_stream stream, const tsr_tensor& tensor,
                    int32_t peer) {
  if (!TSR_ENTRY_PRESENT(comm_, recv)) return NoCollectives("recv");
  return Check(comm_->recv(comm, stream, &tensor, peer), "recv");
}

StatusOr<tsr_comm_unique_id> Plugin::CommGetUniqueId() {
  if (!HasCrossProcessCollectives()) {
    return NoCrossProcessCollectives("comm_get_unique_id");
  }
  TSR_RETURN_IF_ERROR(RequireInit("comm_get_unique_id"));
  tsr_comm_unique_id id{};
  TSR_RETURN_IF_ERROR(
      Check(comm_->comm_get_unique_id(&id), "comm_get_unique_id"));
  return id;
}

StatusOr<tsr_comm> Plugin::CommInitRank(const tsr_comm_unique_id& id,
                                        int32_t num_ranks, int32_t rank,
                                        int32_t device, int32_t node,
                                        int32_t num_nodes) {
  if (!HasCrossProcessCollectives()) {
    return NoCrossProcessCollectives("comm_init_rank");
  }
  TSR_RETURN_IF_ERROR(RequireInit("comm_init_rank"));
  tsr_comm_init_rank_args args{};
  args.struct_size = sizeof(args);
  args.id = &id;
  args.num_ranks = num_ranks;
  args.rank = rank;
  args.device = device;
  args.node = node;
  args.num_nodes = num_nodes;
  tsr_comm comm = nullptr;
  TSR_RETURN_IF_ERROR(Check(comm_->comm_init_rank(&args, &comm),
                            "comm_init_rank")
                          .WithContext(fmt::format("rank {} of {}", rank,
                                                   num_ranks)));
  return comm;
}

Status Plugin::ReduceScatter(tsr_comm comm, tsr_stream stream,
                             const tsr_tensor& send, const tsr_tensor& recv,
                             tsr_reduce_op op) {
  if (!TSR_ENTRY_PRESENT(comm_, reduce_scatter)) {
    return NoCrossProcessCollectives("reduce_scatter");
  }
  return Check(comm_->reduce_scatter(comm, stream, &send, &recv, op),
               "reduce_scatter");
}

Status Plugin::BeginCapture(tsr_stream stream) {
  if (graph_ == nullptr) return NoGraphs("begin_capture");
  return Check(graph_->begin_capture(stream), "graph begin_capture");
}

StatusOr<tsr_graph> Plugin::EndCapture(tsr_stream stream) {
  if (!TSR_ENTRY_PRESENT(graph_, end_capture)) return NoGraphs("end_capture");
  tsr_graph graph = nullptr;
  TSR_RETURN_IF_ERROR(
      Check(graph_->end_capture(stream, &graph), "graph end_capture"));
  return graph;
}

Status Plugin::LaunchGraph(tsr_graph graph, tsr_stream stream) {
  if (!TSR_ENTRY_PRESENT(graph_, launch)) return NoGraphs("launch");
  return Check(graph_->launch(graph, stream), "graph launch");
}

Status Plugin::DestroyGraph(tsr_graph graph) {
  if (!TSR_ENTRY_PRESENT(graph_, destroy)) return NoGraphs("destroy");
  return Check(graph_->destroy(graph), "graph destroy");
}

}  // namespace tessera::runtime
