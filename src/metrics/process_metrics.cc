#include "metrics/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>

#include <fstream>
#include <string>

namespace tessera::metrics {
namespace {

// "VmRSS:   1234 kB" -> 1234 * 1024.
int64_t KibField(const std::string& line, size_t name_length) {
  return std::stoll(line.substr(name_length)) * 1024;
}

Status AddGaugeCollector(Registry* registry, const char* name,
                         const char* help, int64_t ProcessStats::*field) {
  return registry->AddCollector(
      name, help, MetricType::kGauge, {}, [field](CollectorSink& sink) {
        auto stats = ReadProcessStats();
        if (stats.ok()) sink.Add({}, static_cast<double>((*stats).*field));
      });
}

}  // namespace

StatusOr<ProcessStats> ReadProcessStats() {
  ProcessStats stats;
  std::ifstream status("/proc/self/status");
  if (!status) return UnavailableError("cannot read /proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      stats.resident_bytes = KibField(line, 6);
    } else if (line.rfind("VmSize:", 0) == 0) {
      stats.virtual_bytes = KibField(line, 7);
    } else if (line.rfind("Threads:", 0) == 0) {
      stats.threads = std::stoll(line.substr(8));
    }
  }
  DIR* fds = ::opendir("/proc/self/fd");
  if (fds == nullptr) return UnavailableError("cannot read /proc/self/fd");
  while (dirent* entry = ::readdir(fds)) {
    if (entry->d_name[0] != '.') ++stats.open_fds;
  }
  ::closedir(fds);
  --stats.open_fds;  // the descriptor opendir itself holds
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    stats.max_fds = static_cast<int64_t>(limit.rlim_cur);
  }
  return stats;
}

Status RegisterProcessMetrics(Registry* registry) {
  TSR_RETURN_IF_ERROR(AddGaugeCollector(
      registry, "process_resident_memory_bytes",
      "Resident memory size in bytes.", &ProcessStats::resident_bytes));
  TSR_RETURN_IF_ERROR(AddGaugeCollector(
      registry, "process_virtual_memory_bytes",
      "Virtual memory size in bytes.", &ProcessStats::virtual_bytes));
  TSR_RETURN_IF_ERROR(AddGaugeCollector(registry, "process_open_fds",
                                        "Number of open file descriptors.",
                                        &ProcessStats::open_fds));
  TSR_RETURN_IF_ERROR(AddGaugeCollector(
      registry, "process_max_fds",
      "Maximum number of open file descriptors.", &ProcessStats::max_fds));
  return AddGaugeCollector(registry, "process_threads",
                           "Number of threads of the process.",
                           &ProcessStats::threads);
}

}  // namespace tessera::metrics
