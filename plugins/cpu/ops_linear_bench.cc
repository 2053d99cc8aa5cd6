// Speed of the cpu plugin's bf16 x bf16 linear block kernel on the linear
// shapes of qwen3-0.6b (fused qkv 1024->4096, o 2048->1024, fused gate_up
// 1024->6144, down 3072->1024, lm_head 1024->151936), at T = 512 (prefill)
// and T = 1 / 8 (decode), on the best kernel path this CPU has (cpu_isa.h;
// TESSERA_CPU_ISA picks another). The kernel is driven as ops_linear.cc
// drives it: rows in blocks of ~1 MiB of x, items of 64 weight rows handed
// to a ThreadPool of `threads` (the second argument). Reports GFLOP/s
// (2 T K N per iteration).
//
// Not part of ctest. Run from a Release build, e.g.
//   build/bin/cpu_linear_bench --benchmark_filter='T:512'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cpu_isa.h"
#include "ops_linear_kernels.h"
#include "thread_pool.h"

namespace tessera::cpu {
namespace {

struct Shape {
  const char* name;
  int64_t k, n;
};
constexpr Shape kShapes[] = {{"qkv", 1024, 4096},
                             {"o", 2048, 1024},
                             {"gate_up", 1024, 6144},
                             {"down", 3072, 1024},
                             {"lm_head", 1024, 151936}};

CpuIsa ChosenIsa() {
  CpuIsa isa = BestCpuIsa();
  const char* env = std::getenv("TESSERA_CPU_ISA");
  if (env != nullptr && !ResolveCpuIsa(env, "TESSERA_CPU_ISA", &isa).ok()) isa = BestCpuIsa();
  return isa;
}

// args: shape index, T, threads.
void BM_LinearBf16(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const int64_t t_count = state.range(1), k = s.k, n = s.n;
  const CpuIsa isa = ChosenIsa();
  LinearBlockFn<uint16_t, uint16_t> kernel = LinearKernelsFor(isa).bf16_bf16;
  if (kernel == nullptr) {
    state.SkipWithError("this kernel path has no bf16 x bf16 kernel");
    return;
  }
  ThreadPool pool(static_cast<int>(state.range(2)));
  std::mt19937 rng(7);
  // bf16 bit patterns of +-[1, 2) (x) and +-[2^-7, 2^-6) (w).
  std::vector<uint16_t> x(t_count * k), w(n * k);
  for (uint16_t& v : x) v = static_cast<uint16_t>(0x3f80 ^ (rng() & 0x807f));
  for (uint16_t& v : w) v = static_cast<uint16_t>(0x3c00 ^ (rng() & 0x807f));
  std::vector<uint16_t> y(t_count * n);
  constexpr int64_t kBlockN = 64;
  const int64_t mb_max = std::min<int64_t>(t_count, std::max<int64_t>(16, (1 << 20) / (k * 2)));
  const int64_t n_items = (n + kBlockN - 1) / kBlockN;
  for (auto _ : state) {
    for (int64_t m0 = 0; m0 < t_count; m0 += mb_max) {
      const int64_t mb = std::min(mb_max, t_count - m0);
      pool.ParallelFor(n_items, 1, [&](int64_t begin, int64_t end) {
        std::vector<float> out(static_cast<size_t>(mb * kBlockN));
        for (int64_t item = begin; item < end; ++item) {
          const int64_t n0 = item * kBlockN, nb = std::min(kBlockN, n - n0);
          kernel(x.data() + m0 * k, k, mb, w.data() + n0 * k, k, nb, k, out.data(), kBlockN);
          for (int64_t r = 0; r < mb; ++r) {
            for (int64_t j = 0; j < nb; ++j) {  // f32 -> bf16 by truncation (speed only)
              uint32_t bits;
              __builtin_memcpy(&bits, &out[r * kBlockN + j], sizeof(bits));
              y[(m0 + r) * n + n0 + j] = static_cast<uint16_t>(bits >> 16);
            }
          }
        }
      });
    }
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(std::string(s.name) + " [" + CpuIsaName(isa) + "]");
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * t_count * k * n * 1e-9 * state.iterations(),
                                                 benchmark::Counter::kIsRate);
}

void Args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "T", "threads"});
  for (int64_t s = 0; s < 5; ++s) {
    for (int64_t t : {1, 8, 512}) {
      if (s == 4 && t == 512) continue;  // ~80 GFLOP: too long for a benchmark loop
      b->Args({s, t, 2});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_LinearBf16)->Apply(Args);

}  // namespace
}  // namespace tessera::cpu

BENCHMARK_MAIN();
