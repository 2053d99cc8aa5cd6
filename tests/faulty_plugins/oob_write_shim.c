/*
 * libtsr_faulty_oob_write.so: the real plugin, except that rms_norm writes
 * one element past the end of its output — after every rms_norm launch it
 * enqueues a memset of the element just beyond the output view's last one
 * (when that byte is still inside the buffer). plugin-check must fail
 * op.rms_norm.* for writing outside the output views, and nothing else.
 */
#include "shim.h"

static tsr_status shim_launch(tsr_kernel kernel, tsr_stream stream,
                              const tsr_tensor* inputs, size_t num_inputs,
                              const tsr_tensor* outputs, size_t num_outputs,
                              const void* params, size_t params_size) {
  tsr_status status = g_real->launch(kernel, stream, inputs, num_inputs,
                                     outputs, num_outputs, params, params_size);
  if (status != TSR_OK || num_outputs == 0 || !shim_is_tracked_kernel(kernel))
    return status;
  const tsr_tensor* y = &outputs[0];
  uint64_t last = 0; /* the view's last element, in elements */
  for (int32_t d = 0; d < y->ndim; ++d) {
    if (y->shape[d] == 0) return status; /* an empty view */
    last += (uint64_t)(y->shape[d] - 1) * (uint64_t)y->strides[d];
  }
  const size_t size = shim_dtype_size(y->dtype);
  tsr_buffer_info info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  if (g_real->buffer_info(y->buffer, &info) != TSR_OK) return status;
  const uint64_t past = y->offset + (last + 1) * size;
  if (past + size > info.size) return status; /* no room: stay in bounds */
  return g_real->memset(stream, y->buffer, past, 0x7f, size);
}

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  tsr_plugin_api* table =
      shim_load(host, "faulty_oob_write",
                "test plugin: rms_norm writes one element past its output");
  if (table == NULL) return NULL;
  g_shim_tracked_op = TSR_OP_RMS_NORM;
  table->resolve_op = shim_resolve_op_tracking;
  table->launch = shim_launch;
  return table;
}
