/*
 * libtsr_faulty_wrong_op.so: the real plugin, except that rms_norm is
 * numerically wrong — after every rms_norm launch it enqueues a memset that
 * overwrites the first element of the output with 0x7f bytes (about 3.4e38
 * in f32). plugin-check must fail op.rms_norm.* and nothing else.
 */
#include <pthread.h>

#include "shim.h"

#define MAX_KERNELS 256

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static tsr_kernel g_rms_kernels[MAX_KERNELS];
static int g_num_rms_kernels;

static int is_rms_kernel(tsr_kernel kernel) {
  int found = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < g_num_rms_kernels; ++i)
    found |= g_rms_kernels[i] == kernel;
  pthread_mutex_unlock(&g_mu);
  return found;
}

static tsr_status shim_resolve_op(int32_t device,
                                  const tsr_op_signature* signature,
                                  tsr_kernel* out) {
  tsr_status status = g_real->resolve_op(device, signature, out);
  if (status == TSR_OK && signature != NULL &&
      signature->op == TSR_OP_RMS_NORM) {
    pthread_mutex_lock(&g_mu);
    if (g_num_rms_kernels < MAX_KERNELS)
      g_rms_kernels[g_num_rms_kernels++] = *out;
    pthread_mutex_unlock(&g_mu);
  }
  return status;
}

static size_t dtype_size(tsr_dtype dtype) {
  switch (dtype) {
    case TSR_DTYPE_F32:
    case TSR_DTYPE_I32:
      return 4;
    case TSR_DTYPE_F16:
    case TSR_DTYPE_BF16:
      return 2;
    case TSR_DTYPE_I64:
      return 8;
    default:
      return 1;
  }
}

static tsr_status shim_launch(tsr_kernel kernel, tsr_stream stream,
                              const tsr_tensor* inputs, size_t num_inputs,
                              const tsr_tensor* outputs, size_t num_outputs,
                              const void* params, size_t params_size) {
  tsr_status status = g_real->launch(kernel, stream, inputs, num_inputs,
                                     outputs, num_outputs, params, params_size);
  if (status != TSR_OK || num_outputs == 0 || !is_rms_kernel(kernel))
    return status;
  const tsr_tensor* y = &outputs[0];
  for (int32_t d = 0; d < y->ndim; ++d) {
    if (y->shape[d] == 0) return status; /* nothing to corrupt */
  }
  return g_real->memset(stream, y->buffer, y->offset, 0x7f,
                        dtype_size(y->dtype));
}

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  tsr_plugin_api* table =
      shim_load(host, "faulty_wrong_op",
                "test plugin: rms_norm writes a wrong first element");
  if (table == NULL) return NULL;
  table->resolve_op = shim_resolve_op;
  table->launch = shim_launch;
  return table;
}
