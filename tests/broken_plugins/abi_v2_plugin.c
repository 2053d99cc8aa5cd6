/* A plugin built for a future plugin ABI major version (2.0). Its table keeps
 * the first three fields every major shares (struct_size, abi_major,
 * abi_minor), which is all the host may read; the host must reject it and
 * show both versions (2.0 and its own 1.x). */
#include <string.h>

#include <tessera/plugin/tessera_plugin.h>

static tsr_plugin_api g_api;

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  (void)host;
  memset(&g_api, 0, sizeof(g_api));
  g_api.struct_size = sizeof(g_api);
  g_api.abi_major = 2;
  g_api.abi_minor = 0;
  return &g_api;
}
