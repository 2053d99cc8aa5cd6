// The arithmetic peak of a cpu-plugin kernel path, measured: the path's
// register loop of independent multiply-adds (cpu_peak_loops.h), run on
// every thread of a pool at once. The reference a GEMM benchmark divides
// by ("fraction of peak"), measured in the same run because these machines
// are shared and their clocks move.
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
