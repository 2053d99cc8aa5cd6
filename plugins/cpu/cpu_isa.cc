#include "cpu_isa.h"

#include <atomic>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace tessera::cpu {
namespace {

std::atomic<int> g_active{static_cast<int>(CpuIsa::kScalar)};

constexpr CpuIsa kAll[] = {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512, CpuIsa::kAvx512Bf16};

#if defined(__x86_64__) && defined(__GNUC__)
// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
// does not know "f16c".
bool CpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}
#endif

std::string SupportedList() {
  std::string list;
  for (CpuIsa isa : kAll) {
    if (!CpuSupports(isa)) continue;
    if (!list.empty()) list += ", ";
    list += CpuIsaName(isa);
  }
  return list;
}

}  // namespace

const char* CpuIsaName(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kScalar:
      return "scalar";
    case CpuIsa::kAvx2:
      return "avx2";
    case CpuIsa::kAvx512:
      return "avx512";
    case CpuIsa::kAvx512Bf16:
      return "avx512bf16";
  }
  return "unknown";
}

bool CpuSupports(CpuIsa isa) {
  if (isa == CpuIsa::kScalar) return true;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    CpuHasF16c();
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  switch (isa) {
    case CpuIsa::kAvx2:
      return avx2;
    case CpuIsa::kAvx512:
      return avx512;
    case CpuIsa::kAvx512Bf16:
      return avx512 && __builtin_cpu_supports("avx512bf16");
    default:
      return false;
  }
#else
  return false;
#endif
}

bool CpuHasAvx512Vnni() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = [] {
    __builtin_cpu_init();
    return CpuSupports(CpuIsa::kAvx512) && __builtin_cpu_supports("avx512vnni");
  }();
  return has;
#else
  return false;
#endif
}

CpuIsa BestCpuIsa() {
  CpuIsa best = CpuIsa::kScalar;
  for (CpuIsa isa : kAll) {
    if (CpuSupports(isa)) best = isa;
  }
  return best;
}

Status ResolveCpuIsa(const std::string& requested, const char* source, CpuIsa* out) {
  if (requested.empty()) {
    *out = BestCpuIsa();
    return OkStatus();
  }
  for (CpuIsa isa : kAll) {
    if (requested != CpuIsaName(isa)) continue;
    if (!CpuSupports(isa)) {
      return Unsupported(source, "=", requested, " asks for a kernel path this CPU cannot run; ",
                         "this machine supports: ", SupportedList(),
                         " (unset it to pick the best one)");
    }
    *out = isa;
    return OkStatus();
  }
  return InvalidArgument(source, "='", requested,
                         "' is not a kernel path; use one of scalar, avx2, avx512, avx512bf16 "
                         "(this machine supports: ",
                         SupportedList(), ")");
}

CpuIsa ActiveCpuIsa() { return static_cast<CpuIsa>(g_active.load(std::memory_order_acquire)); }

void SetActiveCpuIsa(CpuIsa isa) {
  g_active.store(static_cast<int>(isa), std::memory_order_release);
}

}  // namespace tessera::cpu
