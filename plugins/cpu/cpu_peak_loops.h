// The peak multiply-add loop of each cpu-plugin kernel path: independent
// accumulator chains in registers (12 of the 16 xmm/ymm, 16 of the 32 zmm:
// enough to cover a 4-6 cycle latency on two pipes, and no spills) that
// never touch memory inside the loop; the result is summed afterwards so
// the compiler cannot drop it.
//
//   scalar      SSE2 mulps + addps (4 lanes, 8 flops per pair): what the
//               portable kernels compile to on baseline x86-64
//   avx2        vfmadd231ps ymm (16 flops)
//   avx512      vfmadd231ps zmm (32 flops)
//   avx512bf16  vdpbf16ps zmm (64 flops: 32 bf16 products, 32 adds)
//
// Used by the plugin (bf16_gemm_choice.h times two of them at init) and by
// cpu_linear_bench (cpu_peak_flops.h). Pure; thread-safe.
#pragma once

#include <cstdint>

#include "cpu_isa.h"

namespace tessera::cpu {

// Runs `iters` iterations of `isa`'s loop on the calling thread and returns
// the flops done (0 on builds for other architectures). The caller must
// have checked CpuSupports(isa).
double RunPeakLoop(CpuIsa isa, int64_t iters);

}  // namespace tessera::cpu
