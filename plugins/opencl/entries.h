// The C entries of the OpenCL plugin's tsr_plugin_api table, grouped by file:
//   plugin_entry.cc   manifest, init/shutdown, devices, memory, copies
//   stream_entries.cc streams and events
//   op_entries.cc     list_ops, resolve_op, launch
// Each entry validates every handle and pointer before use and reports
// failures through last_error (entry_guard.h).
#ifndef TESSERA_PLUGINS_OPENCL_ENTRIES_H_
#define TESSERA_PLUGINS_OPENCL_ENTRIES_H_

#include "tessera/plugin/tessera_plugin.h"

namespace tessera::opencl::entry {

tsr_status StreamCreate(int32_t device, tsr_stream* out);
tsr_status StreamDestroy(tsr_stream stream);
tsr_status StreamSynchronize(tsr_stream stream);
tsr_status StreamQuery(tsr_stream stream);
tsr_status EventCreate(int32_t device, tsr_event* out);
tsr_status EventDestroy(tsr_event event);
tsr_status EventRecord(tsr_event event, tsr_stream stream);
tsr_status StreamWaitEvent(tsr_stream stream, tsr_event event);
tsr_status GraphBeginCapture(tsr_stream stream);
tsr_status GraphEndCapture(tsr_stream stream, tsr_graph* out);
tsr_status GraphLaunch(tsr_graph graph, tsr_stream stream);
tsr_status GraphDestroy(tsr_graph graph);
tsr_status EventSynchronize(tsr_event event);
tsr_status EventQuery(tsr_event event);

tsr_status ListOps(const tsr_op_signature** ops_out, size_t* count_out);
tsr_status ResolveOp(int32_t device, const tsr_op_signature* signature, tsr_kernel* out);
tsr_status Launch(tsr_kernel kernel, tsr_stream stream, const tsr_tensor* inputs,
                  size_t num_inputs, const tsr_tensor* outputs, size_t num_outputs,
                  const void* params, size_t params_size);

}  // namespace tessera::opencl::entry

namespace tessera::opencl {
// comm_entries.cc: the comm table (ABI 1.3, host-staged shared memory).
const tsr_comm_api* CommApi();
}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_ENTRIES_H_
