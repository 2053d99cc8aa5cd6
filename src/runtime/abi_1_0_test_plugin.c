/*
 * A test plugin for runtime_test: the minimal example plugin as a plugin
 * built against ABI 1.0 would present it — table and manifest say 1.0 —
 * so the tests can check that a 1.1 host still loads and runs 1.0 plugins
 * (TSR_PLUGIN_ABI_MINOR_FLOOR is 0). It dlopens the real minimal plugin
 * (TSR_ABI10_TARGET, set by CMake), copies its table and manifest and
 * changes only abi_minor. Built against the ABI header only.
 */
#include <dlfcn.h>
#include <string.h>

#include "tessera/plugin/tessera_plugin.h"

static tsr_plugin_api g_table;
static tsr_plugin_manifest g_manifest;

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  void* handle = dlopen(TSR_ABI10_TARGET, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) return NULL;
  tsr_get_plugin_api_fn get =
      (tsr_get_plugin_api_fn)dlsym(handle, TSR_PLUGIN_ENTRY_SYMBOL);
  const tsr_plugin_api* real = get != NULL ? get(host) : NULL;
  if (real == NULL || real->manifest == NULL) return NULL;
  memcpy(&g_table, real, sizeof(g_table));
  memcpy(&g_manifest, real->manifest, sizeof(g_manifest));
  g_manifest.abi_minor = 0;
  g_manifest.min_host_abi_minor = 0;
  g_table.abi_minor = 0;
  g_table.manifest = &g_manifest;
  return &g_table;
}
