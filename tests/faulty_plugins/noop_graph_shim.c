/*
 * libtsr_faulty_noop_graph.so: the real plugin, except that replaying a
 * graph does nothing (graph launch returns TSR_OK and runs none of the
 * captured work) — a graph table that records nothing. plugin-check must
 * fail the graphs checks that replay, naming the replay.
 */
#include "shim.h"

static tsr_graph_api g_shim_graph;

static tsr_status shim_graph_launch(tsr_graph graph, tsr_stream stream) {
  (void)graph;
  (void)stream;
  return TSR_OK;
}

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  tsr_plugin_api* table = shim_load(host, "faulty_noop_graph",
                                    "test plugin: a graph replay runs nothing");
  if (table == NULL) return NULL;
  if (g_real->graph == NULL) {
    shim_log(host, "faulty_noop_graph: the wrapped plugin has no graph table");
    return NULL;
  }
  memcpy(&g_shim_graph, g_real->graph, sizeof(g_shim_graph));
  g_shim_graph.launch = shim_graph_launch;
  table->graph = &g_shim_graph;
  return table;
}
