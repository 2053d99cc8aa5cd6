// Speed of the cpu plugin's linear kernels for bf16 weights on the linear
// shapes of qwen3-0.6b (fused qkv 1024->4096, o 2048->1024, fused gate_up
// 1024->6144, down 3072->1024, lm_head 1024->151936), at T = 512 (prefill)
// and T = 1 / 8 (decode), on the best kernel path this CPU has (cpu_isa.h;
// TESSERA_CPU_ISA picks another), against the references of the same run:
//
//  - BM_Linear: the kernel ops_linear.cc runs for bf16 x bf16 on the path
//    (bf16_bf16 where the path has it, else f32_bf16 on x widened to f32
//    once), driven as ops_linear.cc drives it: rows in blocks of ~1 MiB of
//    x, items of 64 weight rows handed to a ThreadPool of `threads`.
//  - BM_OpenBlasSgemm (when OpenBLAS was found): cblas_sgemm on the same
//    numbers with the weights widened to f32 beforehand (twice the weight
//    bytes: what using it would cost), on `threads` OpenBLAS threads.
//    Debian's OpenBLAS is built without bf16, so it has no sbgemm.
//
// Every row reports GFLOP/s (2 T K N per iteration), peak_GFLOP/s (the
// path's multiply-add loop on the same threads, cpu_peak_flops.h, measured
// once per run) and of_peak (their ratio).
//
// Not part of ctest. Run from a Release build, e.g.
//   build/bin/cpu_linear_bench --benchmark_filter='T:512'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "cpu_isa.h"
#include "cpu_peak_flops.h"
#include "ops_linear_kernels.h"
#include "thread_pool.h"

#if defined(TSR_BENCH_HAVE_OPENBLAS)
#include <cblas.h>
#endif

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

// The path's peak on `threads` threads, measured on first use.
double PeakGflops(int threads) {
  static std::map<int, double> peaks;
  auto it = peaks.find(threads);
  if (it == peaks.end()) {
    ThreadPool pool(threads);
    it = peaks.emplace(threads, MeasurePeakGflops(ChosenIsa(), pool)).first;
  }
  return it->second;
}

float Bf16BitsToF32(uint16_t v) {
  const uint32_t bits = uint32_t{v} << 16;
  float f;
  __builtin_memcpy(&f, &bits, sizeof(f));
  return f;
}

// Memory as the plugin gives weights: 2 MiB aligned, advised onto
// transparent huge pages (memory.cc), so the GEMV rows see the same page
// walks as in a model.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) {
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t bytes = (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
    void* p = nullptr;
    if (posix_memalign(&p, kHuge, bytes) != 0) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const HugePageAllocator&) const { return true; }
};

// Random bf16 operands: x [T, K] of +-[1, 2), w [N, K] of +-[2^-7, 2^-6).
struct Operands {
  std::vector<uint16_t> x;
  std::vector<uint16_t, HugePageAllocator<uint16_t>> w;
  Operands(int64_t t_count, int64_t k, int64_t n) : x(t_count * k), w(n * k) {
    std::mt19937 rng(7);
    for (uint16_t& v : x) v = static_cast<uint16_t>(0x3f80 ^ (rng() & 0x807f));
    for (uint16_t& v : w) v = static_cast<uint16_t>(0x3c00 ^ (rng() & 0x807f));
  }
};

// Times the benchmark loop itself (wall clock), so the fraction of peak
// can be reported as a plain number.
class LoopClock {
 public:
  LoopClock() : t0_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
};

void Report(benchmark::State& state, const Shape& s, int64_t t_count, double seconds,
            const std::string& who) {
  const double gflops = 2.0 * t_count * s.k * s.n * 1e-9 * state.iterations() / seconds;
  const double peak = PeakGflops(static_cast<int>(state.range(2)));
  state.SetLabel(std::string(s.name) + " [" + who + "]");
  state.counters["GFLOP/s"] = gflops;
  state.counters["peak_GFLOP/s"] = peak;
  state.counters["of_peak"] = peak > 0 ? gflops / peak : 0;
}

// One linear y = x w^T through a block kernel with x of type XT, as
// ops_linear.cc drives it; y truncated to bf16 (speed only).
template <typename XT>
void DriveKernel(LinearBlockFn<XT, uint16_t> kernel, const XT* x, const uint16_t* w,
                 int64_t t_count, int64_t k, int64_t n, ThreadPool& pool, uint16_t* y) {
  constexpr int64_t kBlockN = 64;
  const int64_t mb_max = std::min<int64_t>(
      t_count, std::max<int64_t>(16, (1 << 20) / (k * static_cast<int64_t>(sizeof(XT)))));
  const int64_t n_items = (n + kBlockN - 1) / kBlockN;
  for (int64_t m0 = 0; m0 < t_count; m0 += mb_max) {
    const int64_t mb = std::min(mb_max, t_count - m0);
    pool.ParallelFor(n_items, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> out(static_cast<size_t>(mb * kBlockN));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n0 = item * kBlockN, nb = std::min(kBlockN, n - n0);
        kernel(x + m0 * k, k, mb, w + n0 * k, k, nb, k, out.data(), kBlockN);
        for (int64_t r = 0; r < mb; ++r) {
          for (int64_t j = 0; j < nb; ++j) {
            uint32_t bits;
            __builtin_memcpy(&bits, &out[r * kBlockN + j], sizeof(bits));
            y[(m0 + r) * n + n0 + j] = static_cast<uint16_t>(bits >> 16);
          }
        }
      }
    });
  }
}

// args: shape index, T, threads.
void BM_Linear(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const int64_t t_count = state.range(1), k = s.k, n = s.n;
  const CpuIsa isa = ChosenIsa();
  const LinearKernels& kernels = LinearKernelsFor(isa);
  ThreadPool pool(static_cast<int>(state.range(2)));
  Operands op(t_count, k, n);
  std::vector<uint16_t> y(t_count * n);
  std::string who = std::string(CpuIsaName(isa));
  PeakGflops(static_cast<int>(state.range(2)));  // measured before the clock starts
  LoopClock clock;
  if (kernels.bf16_bf16 != nullptr) {
    who += " bf16_bf16";
    for (auto _ : state) {
      DriveKernel(kernels.bf16_bf16, op.x.data(), op.w.data(), t_count, k, n, pool, y.data());
      benchmark::DoNotOptimize(y.data());
    }
  } else {
    who += " f32_bf16";
    std::vector<float> xf(op.x.size());
    clock = LoopClock();
    for (auto _ : state) {
      for (size_t i = 0; i < xf.size(); ++i) xf[i] = Bf16BitsToF32(op.x[i]);
      DriveKernel(kernels.f32_bf16, xf.data(), op.w.data(), t_count, k, n, pool, y.data());
      benchmark::DoNotOptimize(y.data());
    }
  }
  Report(state, s, t_count, clock.Seconds(), who);
}

#if defined(TSR_BENCH_HAVE_OPENBLAS)
void BM_OpenBlasSgemm(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const int64_t t_count = state.range(1), k = s.k, n = s.n;
  openblas_set_num_threads(static_cast<int>(state.range(2)));
  Operands op(t_count, k, n);
  std::vector<float> xf(op.x.size()), y(t_count * n);
  std::vector<float, HugePageAllocator<float>> wf(op.w.size());
  for (size_t i = 0; i < xf.size(); ++i) xf[i] = Bf16BitsToF32(op.x[i]);
  for (size_t i = 0; i < wf.size(); ++i) wf[i] = Bf16BitsToF32(op.w[i]);
  PeakGflops(static_cast<int>(state.range(2)));
  LoopClock clock;
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(t_count),
                static_cast<int>(n), static_cast<int>(k), 1.0f, xf.data(), static_cast<int>(k),
                wf.data(), static_cast<int>(k), 0.0f, y.data(), static_cast<int>(n));
    benchmark::DoNotOptimize(y.data());
  }
  Report(state, s, t_count, clock.Seconds(), "openblas sgemm, f32 weights");
}

#endif

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
BENCHMARK(BM_Linear)->Apply(Args);
#if defined(TSR_BENCH_HAVE_OPENBLAS)
BENCHMARK(BM_OpenBlasSgemm)->Apply(Args);
#endif

}  // namespace
}  // namespace tessera::cpu

BENCHMARK_MAIN();
