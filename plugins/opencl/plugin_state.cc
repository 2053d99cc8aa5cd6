#include "plugin_state.h"

#include <atomic>
#include <mutex>

#include "kit/rank_comm.h"
#include "kit/host_log.h"
#include "kit/init_args.h"
#include "program_cache.h"

namespace tessera::opencl {
namespace {

constexpr const char* kKnownKeys = "cache_dir, comm_timeout_ms";

std::mutex g_init_mu;
std::atomic<PluginState*> g_state{nullptr};

__attribute__((destructor)) void ShutdownAtUnload() {
  if (g_state.load() != nullptr) (void)ShutdownPlugin();
}

const char* TypeName(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "gpu";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (type & CL_DEVICE_TYPE_CPU) return "cpu";
  return "other";
}

}  // namespace

PluginState* State() { return g_state.load(std::memory_order_acquire); }

Status RequireState(tsr_status code) {
  if (State() != nullptr) return OkStatus();
  return Status(code,
                "the opencl plugin is not initialised; call init first (after "
                "shutdown every handle is gone)");
}

Status CheckDevice(int device) {
  TSR_CL_RETURN_IF_ERROR(RequireState());
  int count = State()->device_count();
  if (device < 0 || device >= count) {
    return NotFound("device ", device, " does not exist; this plugin has ", count,
                    " OpenCL device(s) (ordinals 0..", count - 1,
                    "); `clinfo -l` lists them, the visible-device filter picks them");
  }
  return OkStatus();
}

Status ResolveTensorBuffer(tsr_buffer handle, const std::string& label, ResolvedBuffer* out,
                           std::vector<std::shared_ptr<Buffer>>* keep) {
  std::shared_ptr<Buffer> buffer = State()->buffers.Find(handle);
  if (buffer == nullptr) return UnknownBufferHandle(label, handle);
  out->size = buffer->size;
  out->host_base = nullptr;  // device memory: kernels address it through the cl_mem
  out->object = buffer.get();
  if (keep != nullptr) keep->push_back(std::move(buffer));
  return OkStatus();
}

int32_t ProbeScore() {
  int32_t best = 0;
  for (const PhysicalDevice& d : FindPhysicalDevices()) {
    // A CPU OpenCL device (PoCL) ranks below the cpu plugin (10), so the
    // default stays cpu and --platform opencl picks this one.
    int32_t score = 5;
    if (d.type & CL_DEVICE_TYPE_GPU) score = 100;
    else if (d.type & CL_DEVICE_TYPE_ACCELERATOR) score = 50;
    best = score > best ? score : best;
  }
  return best;
}

void SetHostServices(const tsr_host_services* host) { plugin_kit::SetHostServices(host); }

void Log(tsr_log_level level, const std::string& message) {
  plugin_kit::LogToHost("opencl", level, message);
}

Status InitPlugin(const tsr_init_args* args) {
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (g_state.load() != nullptr) {
    return InvalidArgument("the plugin is already initialised; call shutdown before init again");
  }
  plugin_kit::InitArgs init;
  TSR_CL_RETURN_IF_ERROR(plugin_kit::ReadInitArgs(args, &init));
  auto state = std::make_unique<PluginState>();
  state->cache_dir = DefaultProgramCacheDir();
  for (const auto& [key, value] : init.options) {
    if (key == "cache_dir") {
      state->cache_dir = value;
    } else if (key == "comm_timeout_ms") {
      TSR_CL_RETURN_IF_ERROR(
          plugin_kit::ParseIntOption(key, value, 1, 86400000, &state->comm_timeout_ms));
    } else {
      return InvalidArgument("unknown option '", key, "'; the opencl plugin knows: ", kKnownKeys);
    }
  }
  std::vector<PhysicalDevice> physical = FindPhysicalDevices();
  if (physical.empty()) {
    return Status(TSR_ERR_NOT_FOUND,
                  "no OpenCL platform with a usable device was found; install a driver "
                  "(e.g. Debian's pocl-opencl-icd for CPUs) and check `clinfo -l`");
  }
  std::vector<int> visible = plugin_kit::VisibleDevices(init, static_cast<int>(physical.size()));
  TSR_CL_RETURN_IF_ERROR(OpenDevices(physical, visible, state->cache_dir, &state->devices));
  const size_t num_sigs = NumOpSignatures();
  for (int d = 0; d < state->device_count(); ++d) {
    for (size_t i = 0; i < num_sigs; ++i) {
      auto kernel = std::make_shared<Kernel>();
      kernel->device = d;
      kernel->signature = static_cast<long>(i);
      kernel->def = OpSignatureInfos()[i].def;
      kernel->enqueue = FindClOp(kernel->def->id);
      state->kernel_handles.push_back(state->kernels.Add(std::move(kernel)));
    }
  }
  for (const auto& d : state->devices) {
    Log(TSR_LOG_INFO, StrCat("device ", d->ordinal, ": ", d->name, " (", TypeName(d->type), ", ",
                             d->platform_name, " driver ", d->driver_version, ", ",
                             d->compute_units, " compute units, ", d->global_mem >> 20,
                             " MiB); kernel binaries cached in ",
                             d->cache_dir.empty() ? "(nowhere)" : d->cache_dir));
  }
  g_state.store(state.release(), std::memory_order_release);
  return OkStatus();
}

Status ShutdownPlugin() {
  std::lock_guard<std::mutex> lock(g_init_mu);
  PluginState* state = g_state.exchange(nullptr);
  if (state == nullptr) {
    return InvalidArgument("the plugin is not initialised; nothing to shut down");
  }
  state->streams.RemoveAll();  // each finishes its queue
  state->graphs.RemoveAll();
  state->events.RemoveAll();
  state->kernels.RemoveAll();
  state->buffers.RemoveAll();
  delete state;
  plugin_kit::StopCommRendezvous();
  return OkStatus();
}

}  // namespace tessera::opencl
