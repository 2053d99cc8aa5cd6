// CpuIsa: the x86 instruction-set paths the cpu plugin's hot kernels (the
// linear op) are compiled for, which of them this machine can run (cpuid,
// via __builtin_cpu_supports), and the one chosen at init.
//
//   scalar      portable C++ (the build's baseline ISA); every machine
//   avx2        AVX2 + FMA + F16C
//   avx512      AVX-512 F/BW/VL (+ FMA, F16C)
//   avx512bf16  avx512 plus AVX512_BF16 (vdpbf16ps on bf16 x bf16)
//
// The active path is picked once by InitPlugin (the `isa=` option, else the
// TESSERA_CPU_ISA environment variable, else the best supported one) and
// read by kernels afterwards; it is a process-wide atomic, so reads are
// thread-safe and see the value of the latest successful init.
#ifndef TESSERA_PLUGINS_CPU_CPU_ISA_H_
#define TESSERA_PLUGINS_CPU_CPU_ISA_H_

#include <string>

#include "kit_names.h"

namespace tessera::cpu {

enum class CpuIsa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };

// "scalar", "avx2", "avx512", "avx512bf16".
const char* CpuIsaName(CpuIsa isa);
// True when this build has the path and this CPU can run it.
bool CpuSupports(CpuIsa isa);
// The fastest path CpuSupports.
CpuIsa BestCpuIsa();

// True when this CPU runs the avx512 path and also has AVX512_VNNI
// (vpdpbusd: the avx512 paths' int8 dot products use it). Read once.
bool CpuHasAvx512Vnni();

// Resolves a requested path: `requested` empty means the best supported
// one. An unknown name, or a path this CPU lacks, is an error naming the
// paths this machine supports. `source` names where the request came from
// (e.g. "TESSERA_CPU_ISA") for the message.
Status ResolveCpuIsa(const std::string& requested, const char* source, CpuIsa* out);

// The path kernels use (kScalar before the first init).
CpuIsa ActiveCpuIsa();
void SetActiveCpuIsa(CpuIsa isa);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_CPU_ISA_H_
