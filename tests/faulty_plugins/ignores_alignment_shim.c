/*
 * libtsr_faulty_ignores_alignment.so: the real plugin made to look like an
 * accelerator whose memory the host cannot see (no
 * TSR_CAP_HOST_VISIBLE_DEVICE_MEM, host_pointer NULL for device memory,
 * only the 1.7 device_address), and whose buffer_alloc ignores the
 * requested alignment (it asks the real plugin for its default). plugin-check
 * must fail memory.alignment_requested through device_address, and nothing
 * else.
 */
#include "shim.h"

static tsr_status shim_buffer_alloc(int32_t device, tsr_mem_kind kind,
                                    uint64_t size, uint64_t alignment,
                                    tsr_buffer* out) {
  /* A bad alignment is still refused (by the real plugin); a good one is
   * ignored. */
  const int valid = (alignment & (alignment - 1)) == 0;
  return g_real->buffer_alloc(device, kind, size, valid ? 0 : alignment, out);
}

static tsr_status shim_buffer_info(tsr_buffer buffer, tsr_buffer_info* info) {
  tsr_status status = g_real->buffer_info(buffer, info);
  if (status == TSR_OK && info->kind == TSR_MEM_DEVICE) info->host_pointer = NULL;
  return status;
}

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  tsr_plugin_api* table = shim_load(
      host, "faulty_ignores_alignment",
      "test plugin: device memory not host-visible, alignment ignored");
  if (table == NULL) return NULL;
  g_shim_manifest.capabilities &= ~TSR_CAP_HOST_VISIBLE_DEVICE_MEM;
  table->buffer_alloc = shim_buffer_alloc;
  table->buffer_info = shim_buffer_info;
  return table;
}
