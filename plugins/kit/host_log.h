// The host's log service as a plugin uses it (tsr_host_services.log): kept
// from tsr_get_plugin_api until unload, each line prefixed with the
// plugin's name. Silent when the host gave no usable log entry. Thread-safe.
#ifndef TESSERA_PLUGINS_KIT_HOST_LOG_H_
#define TESSERA_PLUGINS_KIT_HOST_LOG_H_

#include <string>

#include "tessera/plugin/tessera_plugin.h"

namespace tessera::plugin_kit {

// Remembers `host` (NULL: stay silent).
void SetHostServices(const tsr_host_services* host);

// Writes "<plugin>: <message>" through the host's log, if any.
void LogToHost(const char* plugin, tsr_log_level level, const std::string& message);

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_HOST_LOG_H_
