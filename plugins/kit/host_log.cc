#include "host_log.h"

#include <atomic>

namespace tessera::plugin_kit {
namespace {

std::atomic<const tsr_host_services*> g_host{nullptr};

}  // namespace

void SetHostServices(const tsr_host_services* host) { g_host.store(host); }

void LogToHost(const char* plugin, tsr_log_level level, const std::string& message) {
  const tsr_host_services* host = g_host.load();
  if (host == nullptr || host->struct_size < sizeof(tsr_host_services) ||
      host->log == nullptr) {
    return;
  }
  host->log(host->host_context, level, (std::string(plugin) + ": " + message).c_str());
}

}  // namespace tessera::plugin_kit
