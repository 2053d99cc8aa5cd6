/*
 * libtsr_faulty_ignores_wait.so: the real plugin, except that
 * stream_wait_event returns TSR_OK without making the stream wait.
 * plugin-check's streams.cross_stream_wait must fail.
 */
#include "shim.h"

static tsr_status shim_stream_wait_event(tsr_stream stream, tsr_event event) {
  (void)stream;
  (void)event;
  return TSR_OK;
}

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  tsr_plugin_api* table =
      shim_load(host, "faulty_ignores_wait",
                "test plugin: stream_wait_event does nothing");
  if (table == NULL) return NULL;
  table->stream_wait_event = shim_stream_wait_event;
  return table;
}
