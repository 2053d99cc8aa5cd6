/*
 * libtsr_faulty_wrong_op.so: the real plugin, except that rms_norm is
 * numerically wrong — after every rms_norm launch it enqueues a memset that
 * overwrites the first element of the output with 0x7f bytes (about 3.4e38
 * in f32). plugin-check must fail op.rms_norm.* and nothing else.
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
  for (int32_t d = 0; d < y->ndim; ++d) {
    if (y->shape[d] == 0) return status; /* nothing to corrupt */
  }
  return g_real->memset(stream, y->buffer, y->offset, 0x7f,
                        shim_dtype_size(y->dtype));
}

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  tsr_plugin_api* table =
      shim_load(host, "faulty_wrong_op",
                "test plugin: rms_norm writes a wrong first element");
  if (table == NULL) return NULL;
  g_shim_tracked_op = TSR_OP_RMS_NORM;
  table->resolve_op = shim_resolve_op_tracking;
  table->launch = shim_launch;
  return table;
}
