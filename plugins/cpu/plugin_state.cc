#include "plugin_state.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "host_info.h"
#include "kit/host_log.h"
#include "kit/rank_comm.h"
#include "options.h"

namespace tessera::cpu {
namespace {

std::mutex g_init_mu;
std::atomic<PluginState*> g_state{nullptr};

// Runs at dlclose/exit: a host that forgot shutdown must not leave worker
// threads running code that is about to be unmapped.
__attribute__((destructor)) void ShutdownAtUnload() {
  if (g_state.load() != nullptr) (void)ShutdownPlugin();
}

// The init log line's note on the bf16 prefill GEMM (avx512bf16 only).
std::string Bf16GemmNote(CpuIsa isa, const Bf16GemmChoice& choice) {
  if (isa != CpuIsa::kAvx512Bf16) return "";
  std::string note = StrCat(", bf16 prefill GEMM ",
                            choice.gemm == Bf16Gemm::kDpbf16 ? "vdpbf16ps" : "f32 FMA");
  if (choice.dpbf16_over_fma > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof(ratio), "%.2f", choice.dpbf16_over_fma);
    note += StrCat(" (vdpbf16ps measured ", ratio,
                   "x the flops of an FMA here; bf16_gemm=dpbf16|f32 to force)");
  } else {
    note += " (bf16_gemm option)";
  }
  return note;
}

}  // namespace

PluginState* State() { return g_state.load(std::memory_order_acquire); }

Status RequireState(tsr_status code) {
  if (State() != nullptr) return OkStatus();
  return Status(code,
                "the cpu plugin is not initialised; call init first (after "
                "shutdown every handle is gone)");
}

Status ResolveTensorBuffer(tsr_buffer handle, const std::string& label, ResolvedBuffer* out,
                           std::vector<std::shared_ptr<Buffer>>* keep) {
  std::shared_ptr<Buffer> buffer = State()->buffers.Find(handle);
  if (buffer == nullptr) return UnknownBufferHandle(label, handle);
  out->size = buffer->size;
  out->host_base = buffer->data;
  out->object = buffer.get();
  if (keep != nullptr) keep->push_back(std::move(buffer));
  return OkStatus();
}

Status CheckDevice(int device) {
  TSR_CPU_RETURN_IF_ERROR(RequireState());
  int count = State()->device_count();
  if (device < 0 || device >= count) {
    return NotFound("device ", device, " does not exist; this plugin has ", count,
                    " device(s) (ordinals 0..", count - 1,
                    "); use devices=N or the visible-device filter to change that");
  }
  return OkStatus();
}

void SetHostServices(const tsr_host_services* host) { plugin_kit::SetHostServices(host); }

void Log(tsr_log_level level, const std::string& message) {
  plugin_kit::LogToHost("cpu", level, message);
}

Status InitPlugin(const tsr_init_args* args) {
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (g_state.load() != nullptr) {
    return InvalidArgument("the plugin is already initialised; call shutdown before init again");
  }
  Options options;
  TSR_CPU_RETURN_IF_ERROR(ParseOptions(args, UsableCores(), &options));
  auto state = std::make_unique<PluginState>();
  if (!options.isa.empty()) {
    TSR_CPU_RETURN_IF_ERROR(ResolveCpuIsa(options.isa, "option isa", &state->isa));
  } else {
    const char* env = std::getenv("TESSERA_CPU_ISA");
    TSR_CPU_RETURN_IF_ERROR(
        ResolveCpuIsa(env != nullptr ? env : "", "TESSERA_CPU_ISA", &state->isa));
  }
  TSR_CPU_RETURN_IF_ERROR(ResolveBf16Gemm(options.bf16_gemm, state->isa, &state->bf16_gemm));
  state->threads = options.threads;
  state->comm_timeout_ms = options.comm_timeout_ms;
  state->huge_pages = options.huge_pages;
  state->fabric_rings = options.fabric_rings;
  state->num_physical = options.devices;
  state->physical = options.visible;
  state->cpu_name = CpuModelName();
  state->cpu_vendor = CpuVendor();
  state->memory_total = MemoryTotal();
  for (size_t i = 0; i < state->physical.size(); ++i) {
    std::vector<int> cpus;
    if (!options.cpusets.empty()) cpus = options.cpusets[state->physical[i]];
    // A pinned device's threads default to its CPUs.
    const int threads = !cpus.empty() && !options.threads_given
                            ? static_cast<int>(cpus.size())
                            : options.threads;
    state->pools.push_back(std::make_unique<ThreadPool>(threads, cpus));
    state->memory.push_back(std::make_shared<MemoryCounter>());
  }
  size_t num_sigs = NumOpSignatures();
  for (int d = 0; d < state->device_count(); ++d) {
    for (size_t i = 0; i < num_sigs; ++i) {
      auto kernel = std::make_shared<Kernel>();
      kernel->device = d;
      kernel->signature = static_cast<long>(i);
      kernel->def = OpSignatureInfos()[i].def;
      kernel->run = FindOpRun(*kernel->def);
      state->kernel_handles.push_back(state->kernels.Add(std::move(kernel)));
    }
  }
  Log(TSR_LOG_INFO, StrCat("initialised ", state->device_count(), " of ", options.devices,
                          " virtual device(s) on ", state->cpu_name, ", ", options.threads,
                          " thread(s) each, kernel path ", CpuIsaName(state->isa),
                          Bf16GemmNote(state->isa, state->bf16_gemm)));
  SetActiveCpuIsa(state->isa);
  SetActiveBf16Gemm(state->bf16_gemm.gemm);
  g_state.store(state.release(), std::memory_order_release);
  return OkStatus();
}

Status ShutdownPlugin() {
  std::lock_guard<std::mutex> lock(g_init_mu);
  PluginState* state = g_state.exchange(nullptr);
  if (state == nullptr) {
    return InvalidArgument("the plugin is not initialised; nothing to shut down");
  }
  // Stop every stream first (their workers may wait on each other or on a
  // collective), then drop the rest.
  std::vector<std::shared_ptr<Stream>> streams = state->streams.RemoveAll();
  for (auto& s : streams) s->RequestClose();
  for (auto& comm : state->comms.RemoveAll()) {
    if (comm->group != nullptr) comm->group->Abort();
  }
  for (auto& s : streams) s->Close();
  streams.clear();
  state->graphs.RemoveAll();
  state->events.RemoveAll();
  state->kernels.RemoveAll();
  state->buffers.RemoveAll();
  state->pools.clear();
  delete state;
  plugin_kit::StopCommRendezvous();
  return OkStatus();
}

}  // namespace tessera::cpu
