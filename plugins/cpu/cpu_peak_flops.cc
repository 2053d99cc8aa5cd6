// MeasurePeakGflops of cpu_peak_flops.h over the loops of cpu_peak_loops.h.
#include "cpu_peak_flops.h"

#include <atomic>
#include <chrono>
#include <cstdint>

#include "cpu_peak_loops.h"

namespace tessera::cpu {

double MeasurePeakGflops(CpuIsa isa, ThreadPool& pool, double seconds) {
  if (!CpuSupports(isa)) return 0;
  const auto loop = [isa](int64_t iters) { return RunPeakLoop(isa, iters); };
  // Calibrate on one thread, then run every thread for ~`seconds`.
  int64_t iters = 1 << 16;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    loop(iters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > seconds / 8 || iters > (int64_t{1} << 34)) {
      iters = static_cast<int64_t>(static_cast<double>(iters) * seconds / s);
      break;
    }
    iters *= 4;
  }
  std::atomic<double> flops{0};
  const auto t0 = std::chrono::steady_clock::now();
  pool.ParallelFor(pool.size(), 1, [&](int64_t begin, int64_t end) {
    double f = 0;
    for (int64_t i = begin; i < end; ++i) f += loop(iters);
    flops.fetch_add(f);
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return flops.load() / s * 1e-9;
}

}  // namespace tessera::cpu
