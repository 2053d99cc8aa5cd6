// Which GEMM the avx512bf16 path runs for prefill-sized bf16 x bf16 linear
// calls. vdpbf16ps does 32 bf16 products per instruction, but how many of
// them a core issues per cycle differs by chip: on AMD Zen 4/5 its flops
// per second are twice an f32 zmm FMA's (830 against 408 GFLOP/s on two
// Zen 5 vCPUs); on Intel Xeons of the Sapphire/Emerald Rapids kind, half
// (170 against 335 on two vCPUs). Where it is the slower one, prefill
// converts x to f32 once per call and runs the avx512 path's f32 panel GEMM
// (weights widened per panel, ops_linear_gemm_f32_body.h) instead.
// Decode-sized calls (fewer than kBf16GemmMinRows rows) keep the vdpbf16ps
// tiles on every chip: they are bound by the weight bytes, not by flops.
//
// Chosen once per InitPlugin from the bf16_gemm option (options.h): `auto`
// (the default) times both peak loops (cpu_peak_loops.h) on the init
// thread, about a millisecond, and picks vdpbf16ps when its flops per
// second are at least the FMA loop's. The choice is a process-wide atomic
// like ActiveCpuIsa (cpu_isa.h): reads are thread-safe and see the latest
// successful init.
#ifndef TESSERA_PLUGINS_CPU_BF16_GEMM_CHOICE_H_
#define TESSERA_PLUGINS_CPU_BF16_GEMM_CHOICE_H_

#include <cstdint>
#include <string>

#include "cpu_isa.h"
#include "kit_names.h"

namespace tessera::cpu {

enum class Bf16Gemm {
  kDpbf16 = 0,  // the path's bf16_bf16 kernel (vdpbf16ps panels)
  kF32Fma = 1,  // x widened to f32, the f32_bf16 kernel (FMA panels)
};

// "dpbf16", "f32".
const char* Bf16GemmName(Bf16Gemm gemm);

// Linear calls with at least this many x rows are prefill-sized: the f32
// panel GEMM's own threshold (ops_linear_kernels_avx512.cc).
constexpr int64_t kBf16GemmMinRows = 32;

struct Bf16GemmChoice {
  Bf16Gemm gemm = Bf16Gemm::kF32Fma;
  // vdpbf16ps flops per second over f32 FMA flops per second, as measured
  // by `auto`; 0 when nothing was measured (forced, or not avx512bf16).
  double dpbf16_over_fma = 0;
};

// The ratio above, on the calling thread: after one warm-up run of each
// loop, the fastest of 5 alternating runs of ~0.1 ms each. Requires
// CpuSupports(CpuIsa::kAvx512Bf16).
double MeasureDpbf16OverFma();

// Resolves the bf16_gemm option for kernel path `isa`: empty or "auto"
// measures on avx512bf16 (and is kF32Fma on every other path, which has no
// bf16 x bf16 kernel); "dpbf16" needs the avx512bf16 path; "f32" is always
// valid. Anything else is TSR_ERR_INVALID_ARGUMENT naming the values.
Status ResolveBf16Gemm(const std::string& requested, CpuIsa isa, Bf16GemmChoice* out);

// What ops_linear.cc uses (kDpbf16 before the first init).
Bf16Gemm ActiveBf16Gemm();
void SetActiveBf16Gemm(Bf16Gemm gemm);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_BF16_GEMM_CHOICE_H_
