// Speed of the cpu plugin's linear kernels for bf16 weights on the linear
// shapes of qwen3-0.6b (fused qkv 1024->4096, o 2048->1024, fused gate_up
// 1024->6144, down 3072->1024, lm_head 1024->151936), at T = 512 (prefill)
// and T = 1 / 8 (decode), on the best kernel path this CPU has (cpu_isa.h;
// TESSERA_CPU_ISA picks another), against the references of the same run:
//
//  - BM_Linear: the kernel ops_linear.cc runs for bf16 x bf16 on the path
//    (bf16_bf16 where the path has it and, at prefill-sized T, where
//    bf16_gemm=auto picks vdpbf16ps on this chip; else f32_bf16 on x
//    widened to f32 once), driven as ops_linear.cc drives it: rows in
//    blocks of ~1 MiB of x, items of 64 weight rows handed to a ThreadPool
//    of `threads`. On the avx512bf16 path, gemm:1 and gemm:2 rows force
//    each of its two prefill GEMMs (bf16_gemm_choice.h) at T = 512.
//  - BM_LinearW8A8 (kind 0: linear v3, int8 weights with an f32 scale per
//    32, Q8_0's numbers; kind 1: linear v4, 4-bit weights packed as Q4_0
//    with f16 scales; kind 2: linear v5, Q6_K super-blocks with their f16
//    d's, the head of llama.cpp's Q4_0 / K-quant files; its rows run at
//    T = 1 and 8): the path's w8a8 table (ops_linear_w8a8_kernels.h)
//    on x quantised per 32, driven the same way, x quantised inside the
//    loop as ops_linear_w8a8.cc does per call.
//  - BM_OpenBlasSgemm (when OpenBLAS was found): cblas_sgemm on the same
//    numbers with the weights widened to f32 beforehand (twice the weight
//    bytes: what using it would cost), on `threads` OpenBLAS threads.
//    Debian's OpenBLAS is built without bf16, so it has no sbgemm.
//
// Every row reports GFLOP/s (2 T K N per iteration), peak_GFLOP/s (the
// path's multiply-add loop on the same threads, cpu_peak_flops.h, measured
// once per run), of_peak (their ratio) and weight_GB/s (the weight and
// scale bytes one iteration reads, per second: what decode at T = 1 is
// bound by; compare the bf16 row of the same shape and T in the same run).
//
// Not part of ctest. Run from a Release build, e.g.
//   build/bin/cpu_linear_bench --benchmark_filter='T:512'
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "bf16_gemm_choice.h"
#include "cpu_isa.h"
#include "cpu_peak_flops.h"
#include "ops_linear_kernels.h"
#include "ops_linear_w8a8_kernels.h"
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

// The peak of `isa`'s loop on `threads` threads, measured on first use.
double PeakGflops(int threads, CpuIsa isa = ChosenIsa()) {
  static std::map<std::pair<int, CpuIsa>, double> peaks;
  auto it = peaks.find({threads, isa});
  if (it == peaks.end()) {
    ThreadPool pool(threads);
    it = peaks.emplace(std::pair{threads, isa}, MeasurePeakGflops(isa, pool)).first;
  }
  return it->second;
}

// The bf16 prefill GEMM as the plugin's bf16_gemm=auto picks it on this
// CPU (bf16_gemm_choice.h), measured on first use.
const Bf16GemmChoice& AutoBf16Gemm() {
  static const Bf16GemmChoice choice = [] {
    Bf16GemmChoice c;
    (void)ResolveBf16Gemm("auto", ChosenIsa(), &c);
    return c;
  }();
  return choice;
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

// peak_isa: the path whose multiply-add loop the kernel's flops are held
// against (the f32 GEMM of the avx512bf16 path runs avx512 FMAs).
void Report(benchmark::State& state, const Shape& s, int64_t t_count, double seconds,
            const std::string& who, double weight_bytes, CpuIsa peak_isa = ChosenIsa()) {
  const double gflops = 2.0 * t_count * s.k * s.n * 1e-9 * state.iterations() / seconds;
  const double peak = PeakGflops(static_cast<int>(state.range(2)), peak_isa);
  state.SetLabel(std::string(s.name) + " [" + who + "]");
  state.counters["GFLOP/s"] = gflops;
  state.counters["peak_GFLOP/s"] = peak;
  state.counters["of_peak"] = peak > 0 ? gflops / peak : 0;
  state.counters["weight_GB/s"] = weight_bytes * 1e-9 * state.iterations() / seconds;
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

// args: shape index, T, threads, gemm (0: what ops_linear.cc runs, with
// bf16_gemm=auto; on the avx512bf16 path also 1: vdpbf16ps, 2: f32 FMA
// for prefill-sized T, both forced).
void BM_Linear(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const int64_t t_count = state.range(1), k = s.k, n = s.n, gemm = state.range(3);
  const CpuIsa isa = ChosenIsa();
  const LinearKernels& kernels = LinearKernelsFor(isa);
  if (gemm != 0 && isa != CpuIsa::kAvx512Bf16) {
    state.SkipWithError("gemm 1/2 compare the avx512bf16 path's two prefill GEMMs");
    return;
  }
  ThreadPool pool(static_cast<int>(state.range(2)));
  Operands op(t_count, k, n);
  std::vector<uint16_t> y(t_count * n);
  std::string who = std::string(CpuIsaName(isa));
  bool dpbf16 = kernels.bf16_bf16 != nullptr;
  if (dpbf16 && t_count >= kBf16GemmMinRows) {
    const Bf16GemmChoice& choice = AutoBf16Gemm();
    dpbf16 = gemm == 0 ? choice.gemm == Bf16Gemm::kDpbf16 : gemm == 1;
    char note[96];
    std::snprintf(note, sizeof(note), " (%s; auto: vdpbf16ps %.2fx FMA)",
                  gemm == 0 ? "auto" : "forced", choice.dpbf16_over_fma);
    who += note;
  }
  const CpuIsa peak_isa = dpbf16 || isa != CpuIsa::kAvx512Bf16 ? isa : CpuIsa::kAvx512;
  PeakGflops(static_cast<int>(state.range(2)), peak_isa);  // measured before the clock starts
  LoopClock clock;
  if (dpbf16) {
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
  Report(state, s, t_count, clock.Seconds(), who, 2.0 * k * n, peak_isa);
}

// args: shape index, T, threads, kind (0: int8 weights, f32 scales per 32;
// 1: 4-bit weights as Q4_0, f16 scales per 32; 2: Q6_K blocks, an f16 d
// per 256).
void BM_LinearW8A8(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const int64_t t_count = state.range(1), k = s.k, n = s.n, group = 32, groups = k / group;
  const bool w4 = state.range(3) == 1, w6 = state.range(3) == 2;
  const CpuIsa isa = ChosenIsa();
  const LinearW8A8Kernels& kernels = LinearW8A8KernelsFor(isa);
  ThreadPool pool(static_cast<int>(state.range(2)));
  std::mt19937 rng(7);
  std::vector<float> x(t_count * k);
  for (float& v : x) v = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) * 1e-3f;
  const int64_t ldw = w4 ? k / 2 : w6 ? k / 256 * kW6BlockBytes : k;
  const int64_t scale_groups = w6 ? k / 256 : groups;
  std::vector<int8_t, HugePageAllocator<int8_t>> w(n * ldw);
  for (int8_t& v : w) v = static_cast<int8_t>(rng());
  std::vector<float, HugePageAllocator<float>> ws(w4 || w6 ? 0 : n * groups);
  std::vector<uint16_t, HugePageAllocator<uint16_t>> ws16(w4 || w6 ? n * scale_groups : 0);
  for (float& v : ws) v = 1e-3f * static_cast<float>(1 + rng() % 16);
  for (uint16_t& v : ws16) v = static_cast<uint16_t>(0x1400 + rng() % 256);  // f16 ~1e-3
  std::vector<int8_t> xq(t_count * k);
  std::vector<float> xs(t_count * groups), y(t_count * n);
  PeakGflops(static_cast<int>(state.range(2)));
  constexpr int64_t kBlockN = 64;
  const int64_t n_items = (n + kBlockN - 1) / kBlockN;
  LoopClock clock;
  for (auto _ : state) {
    pool.ParallelFor(t_count, 1, [&](int64_t begin, int64_t end) {
      kernels.quantize(x.data() + begin * k, k, end - begin, k, group, xq.data() + begin * k, k,
                       xs.data() + begin * groups, groups);
      if (w4 && kernels.permute_w4 != nullptr) {
        kernels.permute_w4(xq.data() + begin * k, k, end - begin, k);
      }
    });
    pool.ParallelFor(n_items, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> out(static_cast<size_t>(t_count * kBlockN));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n0 = item * kBlockN, nb = std::min(kBlockN, n - n0);
        if (w6) {
          kernels.block_w6(xq.data(), k, xs.data(), groups, t_count,
                           reinterpret_cast<const uint8_t*>(w.data()) + n0 * ldw, ldw,
                           ws16.data() + n0 * scale_groups, scale_groups, nb, k, group,
                           out.data(), kBlockN);
        } else if (w4) {
          kernels.block_w4(xq.data(), k, xs.data(), groups, t_count, w.data() + n0 * ldw, ldw,
                           ws16.data() + n0 * groups, groups, nb, k, group, out.data(), kBlockN);
        } else {
          kernels.block(xq.data(), k, xs.data(), groups, t_count, w.data() + n0 * ldw, ldw,
                        ws.data() + n0 * groups, groups, nb, k, group, out.data(), kBlockN);
        }
        for (int64_t r = 0; r < t_count; ++r) {
          std::copy_n(out.data() + r * kBlockN, nb, y.data() + r * n + n0);
        }
      }
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double weight_bytes =
      static_cast<double>(n) * (ldw + scale_groups * (w4 || w6 ? 2 : 4));
  Report(state, s, t_count, clock.Seconds(),
         std::string(CpuIsaName(isa)) + " " + kernels.name +
             (w6 ? " w6a8" : w4 ? " w4a8" : " w8a8"),
         weight_bytes);
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
  Report(state, s, t_count, clock.Seconds(), "openblas sgemm, f32 weights", 4.0 * k * n);
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

void ArgsLinear(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "T", "threads", "gemm"});
  for (int64_t s = 0; s < 5; ++s) {
    for (int64_t t : {1, 8, 512}) {
      if (s == 4 && t == 512) continue;
      b->Args({s, t, 2, 0});
    }
  }
  // Both prefill GEMMs of the avx512bf16 path, forced, beside the choice.
  if (ChosenIsa() == CpuIsa::kAvx512Bf16) {
    for (int64_t gemm : {1, 2}) {
      for (int64_t s = 0; s < 4; ++s) b->Args({s, 512, 2, gemm});
    }
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_Linear)->Apply(ArgsLinear);

void ArgsW8A8(benchmark::internal::Benchmark* b) {
  b->ArgNames({"shape", "T", "threads", "kind"});
  for (int64_t kind : {0, 1}) {
    for (int64_t s = 0; s < 5; ++s) {
      for (int64_t t : {1, 8, 512}) {
        if (s == 4 && t == 512) continue;
        b->Args({s, t, 2, kind});
      }
    }
  }
  // Q6_K: decode sizes on every shape whose K is whole super-blocks.
  for (int64_t s = 0; s < 5; ++s) {
    if (kShapes[s].k % 256 != 0) continue;
    for (int64_t t : {1, 8}) b->Args({s, t, 2, 2});
  }
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_LinearW8A8)->Apply(ArgsW8A8);
#if defined(TSR_BENCH_HAVE_OPENBLAS)
BENCHMARK(BM_OpenBlasSgemm)->Apply(Args);
#endif

}  // namespace
}  // namespace tessera::cpu

BENCHMARK_MAIN();
