/*
 * shim.h — shared part of the faulty "shim" plugins that `tessera
 * plugin-check` must reject (see CMakeLists.txt here).
 *
 * A shim sees only the plugin ABI header. It dlopens a real plugin (the
 * path in the environment variable TSR_SHIM_TARGET, or the compile-time
 * default TSR_SHIM_DEFAULT_TARGET), copies its function table into a table
 * of its own, renames the manifest, and lets the including file override
 * one entry to break one rule. Everything else is the real plugin.
 *
 * Thread-safety: shim_load runs once, from tsr_get_plugin_api.
 */
#ifndef TESSERA_TESTS_FAULTY_PLUGINS_SHIM_H_
#define TESSERA_TESTS_FAULTY_PLUGINS_SHIM_H_

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/plugin/tessera_plugin.h"

#ifndef TSR_SHIM_DEFAULT_TARGET
#error "define TSR_SHIM_DEFAULT_TARGET (the real plugin to wrap)"
#endif

static tsr_plugin_api g_shim_table;
static tsr_plugin_manifest g_shim_manifest;
static const tsr_plugin_api* g_real; /* the wrapped plugin's table */

static void shim_log(const tsr_host_services* host, const char* message) {
  if (host != NULL && host->log != NULL) {
    host->log(host->host_context, TSR_LOG_ERROR, message);
  }
}

/* Loads the real plugin and copies its table into g_shim_table; returns
 * NULL (after logging why) when the real plugin cannot be loaded. */
static tsr_plugin_api* shim_load(const tsr_host_services* host,
                                 const char* name, const char* description) {
  char message[1024];
  const char* path = getenv("TSR_SHIM_TARGET");
  if (path == NULL || path[0] == '\0') path = TSR_SHIM_DEFAULT_TARGET;
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    snprintf(message, sizeof(message),
             "%s: cannot load the wrapped plugin %s: %s", name, path,
             dlerror());
    shim_log(host, message);
    return NULL;
  }
  tsr_get_plugin_api_fn get =
      (tsr_get_plugin_api_fn)dlsym(handle, TSR_PLUGIN_ENTRY_SYMBOL);
  g_real = get != NULL ? get(host) : NULL;
  if (g_real == NULL || g_real->manifest == NULL) {
    snprintf(message, sizeof(message), "%s: %s is not a usable plugin", name,
             path);
    shim_log(host, message);
    return NULL;
  }
  size_t size = g_real->struct_size < sizeof(g_shim_table)
                    ? g_real->struct_size
                    : sizeof(g_shim_table);
  memcpy(&g_shim_table, g_real, size);
  size = g_real->manifest->struct_size < sizeof(g_shim_manifest)
             ? g_real->manifest->struct_size
             : sizeof(g_shim_manifest);
  memcpy(&g_shim_manifest, g_real->manifest, size);
  g_shim_manifest.name = name;
  g_shim_manifest.description = description;
  g_shim_table.manifest = &g_shim_manifest;
  return &g_shim_table;
}

#endif /* TESSERA_TESTS_FAULTY_PLUGINS_SHIM_H_ */
