// PluginState: everything the OpenCL plugin holds between init and
// shutdown — the opened devices and one registry per handle kind.
//
// State() is NULL outside init..shutdown; every entry checks it first
// (RequireState). Init/Shutdown are serialised by a global mutex. The
// registries are thread-safe; the device list is immutable after Init.
#ifndef TESSERA_PLUGINS_OPENCL_PLUGIN_STATE_H_
#define TESSERA_PLUGINS_OPENCL_PLUGIN_STATE_H_

#include <memory>
#include <string>
#include <vector>

#include "cl_ops.h"
#include "device.h"
#include "memory.h"
#include "kit/rank_comm.h"
#include "kit/shm_comm.h"
#include "stream.h"

namespace tessera::opencl {

// A resolved op signature on one device.
struct Kernel {
  int device = 0;
  long signature = 0;  // index into OpSignatures()
  const OpDef* def = nullptr;
  ClOpFn enqueue = nullptr;
};

// One rank of a communicator (a tsr_comm): the kit's cross-process
// transport (shared memory, or Gloo across nodes), fed through host memory
// (comm_entries.cc).
struct Comm {
  std::shared_ptr<plugin_kit::RankComm> remote;
  int rank = 0;
  int size = 1;
  int device = 0;
};

struct PluginState {
  std::vector<std::unique_ptr<Device>> devices;  // by ordinal
  std::string cache_dir;
  int comm_timeout_ms = 60000;  // the comm_timeout_ms option

  HandleRegistry<Buffer> buffers;
  HandleRegistry<Stream> streams;
  HandleRegistry<Event> events;
  HandleRegistry<Kernel> kernels;
  HandleRegistry<Graph> graphs;
  HandleRegistry<Comm> comms;
  // kernel_handles[device * NumOpSignatures() + i]: resolve_op's answers.
  std::vector<uintptr_t> kernel_handles;

  int device_count() const { return static_cast<int>(devices.size()); }
};

PluginState* State();
Status RequireState(tsr_status code = TSR_ERR_INVALID_ARGUMENT);
Status CheckDevice(int device);

// Resolves a tensor's buffer handle for the kit's launch checks; the buffer
// is appended to `keep` when not NULL.
Status ResolveTensorBuffer(tsr_buffer handle, const std::string& label, ResolvedBuffer* out,
                           std::vector<std::shared_ptr<Buffer>>* keep);

// The preference score of the best device present (0: none), for probe.
int32_t ProbeScore();

Status InitPlugin(const tsr_init_args* args);
Status ShutdownPlugin();

void SetHostServices(const tsr_host_services* host);
void Log(tsr_log_level level, const std::string& message);

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_PLUGIN_STATE_H_
