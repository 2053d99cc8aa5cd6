// The process's own resource use, in the standard Prometheus names every
// exporter uses (process_resident_memory_bytes, process_open_fds, ...), read
// from /proc/self at each scrape. `tessera bench --soak` watches them for
// growth; dashboards alert on them as on any service.
//
//   process_resident_memory_bytes  resident set (VmRSS)
//   process_virtual_memory_bytes   address space (VmSize)
//   process_open_fds               open file descriptors
//   process_max_fds                the soft RLIMIT_NOFILE
//   process_threads                threads of the process (tessera's own
//                                  name; no standard one exists)
//
// Thread-safety: ReadProcessStats and the collectors are safe from any
// thread.
#ifndef TESSERA_METRICS_PROCESS_METRICS_H_
#define TESSERA_METRICS_PROCESS_METRICS_H_

#include <cstdint>

#include "base/status.h"
#include "metrics/registry.h"

namespace tessera::metrics {

struct ProcessStats {
  int64_t resident_bytes = 0;
  int64_t virtual_bytes = 0;
  int64_t open_fds = 0;
  int64_t max_fds = 0;
  int64_t threads = 0;
};

// This process's figures from /proc/self (Linux). Unavailable when /proc
// cannot be read.
StatusOr<ProcessStats> ReadProcessStats();

// Registers the families above as collectors on `registry`.
Status RegisterProcessMetrics(Registry* registry);

}  // namespace tessera::metrics

#endif  // TESSERA_METRICS_PROCESS_METRICS_H_
