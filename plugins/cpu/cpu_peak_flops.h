// The arithmetic peak of a cpu-plugin kernel path, measured: a register
// loop of independent multiply-adds on the path's widest instruction, run
// on every thread of a pool at once. The reference a GEMM benchmark divides
// by ("fraction of peak"), measured in the same run because these machines
// are shared and their clocks move.
//
//   scalar      SSE2 mulps + addps (4 lanes, 8 flops per pair): what the
//               portable kernels compile to on baseline x86-64
//   avx2        vfmadd231ps ymm (16 flops)
//   avx512      vfmadd231ps zmm (32 flops)
//   avx512bf16  vdpbf16ps zmm (64 flops: 32 bf16 products, 32 adds)
//
// Bench-only (cpu_linear_bench); not part of the plugin.
#pragma once

#include "cpu_isa.h"
#include "thread_pool.h"

namespace tessera::cpu {

// GFLOP/s of `isa`'s peak loop over all of `pool`'s threads (about
// `seconds` of work). 0 when this CPU cannot run the path.
double MeasurePeakGflops(CpuIsa isa, ThreadPool& pool, double seconds = 0.2);

}  // namespace tessera::cpu
