// Facts about the host machine the cpu plugin reports as device properties:
// processor name and vendor (/proc/cpuinfo), memory (sysinfo and
// /proc/meminfo) and usable cores (the affinity mask). Best effort: every
// function has a fallback and never fails. Thread-safe (no shared state).
#ifndef TESSERA_PLUGINS_CPU_HOST_INFO_H_
#define TESSERA_PLUGINS_CPU_HOST_INFO_H_

#include <cstdint>
#include <string>

namespace tessera::cpu {

// "model name" of the first processor, or "CPU".
std::string CpuModelName();
// "vendor_id" of the first processor mapped to a readable name, or "unknown".
std::string CpuVendor();
// Total physical memory in bytes (0 if unknown).
uint64_t MemoryTotal();
// Memory available to new allocations in bytes (MemAvailable), best effort.
uint64_t MemoryFree();
// Cores this process may run on (>= 1).
int UsableCores();

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_HOST_INFO_H_
