/* A plugin that needs a shared library which is not installed
 * (libtessera_missing_dep.so). dlopen fails; Tessera must name the missing
 * library. */
#include <tessera/plugin/tessera_plugin.h>

int tessera_missing_dep_value(void);

TSR_PLUGIN_EXPORT const tsr_plugin_api* tsr_get_plugin_api(
    const tsr_host_services* host) {
  (void)host;
  /* Never reached: the library fails to load. The call makes the
   * dependency real, so no linker option can drop it. */
  return tessera_missing_dep_value() == 7 ? (const tsr_plugin_api*)0 : 0;
}
