// PluginState: everything the cpu plugin holds between init and shutdown —
// options, the virtual devices and their thread pools, and one registry per
// handle kind.
//
// State() is NULL outside init..shutdown; every entry checks it first
// (RequireState). Init/Shutdown are serialised by a global mutex. The
// registries are thread-safe; the rest is immutable after Init. Work running
// on stream workers never touches State() (shutdown joins those workers
// before the state goes away).
#ifndef TESSERA_PLUGINS_CPU_PLUGIN_STATE_H_
#define TESSERA_PLUGINS_CPU_PLUGIN_STATE_H_

#include <memory>
#include <string>
#include <vector>

#include "collectives.h"
#include "bf16_gemm_choice.h"
#include "cpu_isa.h"
#include "memory.h"
#include "ops.h"
#include "kit_names.h"
#include "stream.h"
#include "thread_pool.h"

namespace tessera::cpu {

// A resolved op signature on one device.
struct Kernel {
  int device = 0;
  long signature = 0;  // index into OpSignatures()
  const OpDef* def = nullptr;
  OpRunFn run = nullptr;
};

struct PluginState {
  int threads = 1;            // per device, the caller included
  int comm_timeout_ms = 60000;  // the comm_timeout_ms option
  bool huge_pages = false;      // the huge_pages option
  std::vector<std::vector<int>> fabric_rings;  // the fabric_rings option
  int num_physical = 1;       // virtual devices before filtering
  std::vector<int> physical;  // ordinal -> physical index
  std::vector<std::unique_ptr<ThreadPool>> pools;  // per ordinal
  CpuIsa isa = CpuIsa::kScalar;  // the kernel path (also ActiveCpuIsa())
  Bf16GemmChoice bf16_gemm;      // prefill bf16 x bf16 (also ActiveBf16Gemm())
  std::string cpu_name;
  std::string cpu_vendor;
  uint64_t memory_total = 0;

  // Per ordinal: bytes in live buffers and their peak (memory_stats).
  std::vector<std::shared_ptr<MemoryCounter>> memory;

  HandleRegistry<Buffer> buffers;
  HandleRegistry<Stream> streams;
  HandleRegistry<Event> events;
  HandleRegistry<Kernel> kernels;
  HandleRegistry<Comm> comms;
  HandleRegistry<Graph> graphs;
  // kernel_handles[device * NumOpSignatures() + i]: resolve_op's answers.
  std::vector<uintptr_t> kernel_handles;

  int device_count() const { return static_cast<int>(physical.size()); }
};

// The live state, or NULL before init / after shutdown.
PluginState* State();

// Fails (with `code`) unless the plugin is initialised.
Status RequireState(tsr_status code = TSR_ERR_INVALID_ARGUMENT);
// Fails unless `device` is an ordinal of the initialised plugin.
Status CheckDevice(int device);

// Resolves a tensor's buffer handle for the kit's launch checks; the buffer
// is appended to `keep` (when not NULL) so queued work can hold it alive.
Status ResolveTensorBuffer(tsr_buffer handle, const std::string& label, ResolvedBuffer* out,
                           std::vector<std::shared_ptr<Buffer>>* keep);

Status InitPlugin(const tsr_init_args* args);
Status ShutdownPlugin();

// Host logging (silent when the host passed no log function).
void SetHostServices(const tsr_host_services* host);
void Log(tsr_log_level level, const std::string& message);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_PLUGIN_STATE_H_
