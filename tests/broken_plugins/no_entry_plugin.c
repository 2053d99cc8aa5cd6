/* A "plugin" that forgets the entry symbol: it exports a function, but not
 * tsr_get_plugin_api. Tessera must reject it and name the missing symbol. */
#include <tessera/plugin/tessera_plugin.h>

TSR_PLUGIN_EXPORT int tsr_get_plugin_api_v0(void) { return 42; }
