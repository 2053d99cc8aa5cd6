#include "host_info.h"

#include <sched.h>
#include <sys/sysinfo.h>

#include <fstream>
#include <thread>

namespace tessera::cpu {
namespace {

// The value of the first "key : value" line of /proc/cpuinfo named `key`.
std::string CpuInfoField(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
    if (name != key) continue;
    std::string value = line.substr(colon + 1);
    size_t start = value.find_first_not_of(" \t");
    return start == std::string::npos ? "" : value.substr(start);
  }
  return "";
}

// A /proc/meminfo field in bytes (0 if absent).
uint64_t MemInfoBytes(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kib = 0;
  std::string unit;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == key + ":") return kib * 1024;
  }
  return 0;
}

}  // namespace

std::string CpuModelName() {
  std::string name = CpuInfoField("model name");
  if (name.empty()) name = CpuInfoField("Model");  // some ARM kernels
  return name.empty() ? "CPU" : name;
}

std::string CpuVendor() {
  std::string id = CpuInfoField("vendor_id");
  if (id == "GenuineIntel") return "Intel";
  if (id == "AuthenticAMD") return "AMD";
  if (!id.empty()) return id;
  std::string implementer = CpuInfoField("CPU implementer");
  if (implementer == "0x41") return "Arm";
  return implementer.empty() ? "unknown" : "implementer " + implementer;
}

uint64_t MemoryTotal() {
  struct sysinfo info;
  if (sysinfo(&info) == 0) return uint64_t{info.totalram} * info.mem_unit;
  return MemInfoBytes("MemTotal");
}

uint64_t MemoryFree() {
  uint64_t available = MemInfoBytes("MemAvailable");
  if (available != 0) return available;
  struct sysinfo info;
  if (sysinfo(&info) == 0) {
    return (uint64_t{info.freeram} + info.bufferram) * info.mem_unit;
  }
  return 0;
}

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace tessera::cpu
