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
#include <pthread.h>
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

/* Kernels of one op, remembered at resolve_op so launch can tell them. */
#define SHIM_MAX_KERNELS 256
static pthread_mutex_t g_shim_kernels_mu = PTHREAD_MUTEX_INITIALIZER;
static tsr_kernel g_shim_kernels[SHIM_MAX_KERNELS];
static int g_shim_num_kernels;
static tsr_op_id g_shim_tracked_op = -1;

/* resolve_op that remembers every kernel of g_shim_tracked_op. */
static tsr_status shim_resolve_op_tracking(int32_t device,
                                           const tsr_op_signature* signature,
                                           tsr_kernel* out) {
  tsr_status status = g_real->resolve_op(device, signature, out);
  if (status == TSR_OK && signature != NULL &&
      signature->op == g_shim_tracked_op) {
    pthread_mutex_lock(&g_shim_kernels_mu);
    if (g_shim_num_kernels < SHIM_MAX_KERNELS)
      g_shim_kernels[g_shim_num_kernels++] = *out;
    pthread_mutex_unlock(&g_shim_kernels_mu);
  }
  return status;
}

static int shim_is_tracked_kernel(tsr_kernel kernel) {
  int found = 0;
  pthread_mutex_lock(&g_shim_kernels_mu);
  for (int i = 0; i < g_shim_num_kernels; ++i)
    found |= g_shim_kernels[i] == kernel;
  pthread_mutex_unlock(&g_shim_kernels_mu);
  return found;
}

static size_t shim_dtype_size(tsr_dtype dtype) {
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

#endif /* TESSERA_TESTS_FAULTY_PLUGINS_SHIM_H_ */
