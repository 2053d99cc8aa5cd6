// What the host CPU can run, for code compiled twice (an AVX2 copy beside
// the baseline) and picked at call time. Dispatch with a plain branch, not
// GCC's target_clones: those resolve through ifuncs, which run before the
// sanitizer runtimes start and crash TSan builds at load.
#ifndef TESSERA_BASE_CPU_FEATURES_H_
#define TESSERA_BASE_CPU_FEATURES_H_

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

namespace tessera {

// True where AVX2 instructions run (the CPU has them and the OS saves ymm
// state). False off x86-64. Thread-safe; cached after the first call.
inline bool HostHasAvx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

// True where F16C's conversions run (CPUID.1:ECX bit 29, read directly:
// clang 14's __builtin_cpu_supports has no "f16c"). False off x86-64.
inline bool HostHasF16c() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
  }();
  return has;
#else
  return false;
#endif
}

}  // namespace tessera

#endif  // TESSERA_BASE_CPU_FEATURES_H_
