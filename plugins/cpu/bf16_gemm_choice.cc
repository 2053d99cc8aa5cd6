#include "bf16_gemm_choice.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>

#include "cpu_peak_loops.h"

namespace tessera::cpu {
namespace {

std::atomic<int> g_bf16_gemm{static_cast<int>(Bf16Gemm::kDpbf16)};

// Seconds one run of `isa`'s peak loop of `iters` iterations takes.
double TimePeakLoop(CpuIsa isa, int64_t iters, double* flops) {
  const auto t0 = std::chrono::steady_clock::now();
  *flops = RunPeakLoop(isa, iters);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* Bf16GemmName(Bf16Gemm gemm) {
  return gemm == Bf16Gemm::kDpbf16 ? "dpbf16" : "f32";
}

double MeasureDpbf16OverFma() {
  // 16 independent instructions per iteration: 4096 iterations are
  // 64 K instructions, ~0.05-0.1 ms at one or two per cycle.
  constexpr int64_t kIters = 4096;
  constexpr int kRuns = 5;
  double flops_dp = 0, flops_fma = 0;
  // Warm-up: the first 512-bit instructions of a quiet core run at reduced
  // throughput for a few microseconds on some chips.
  TimePeakLoop(CpuIsa::kAvx512, kIters, &flops_fma);
  TimePeakLoop(CpuIsa::kAvx512Bf16, kIters, &flops_dp);
  double best_dp = std::numeric_limits<double>::infinity(), best_fma = best_dp;
  for (int run = 0; run < kRuns; ++run) {
    best_fma = std::min(best_fma, TimePeakLoop(CpuIsa::kAvx512, kIters, &flops_fma));
    best_dp = std::min(best_dp, TimePeakLoop(CpuIsa::kAvx512Bf16, kIters, &flops_dp));
  }
  if (best_dp <= 0 || best_fma <= 0) return 1.0;  // a clock too coarse to tell: keep vdpbf16ps
  return (flops_dp / best_dp) / (flops_fma / best_fma);
}

Status ResolveBf16Gemm(const std::string& requested, CpuIsa isa, Bf16GemmChoice* out) {
  *out = Bf16GemmChoice{};
  if (requested == "f32") return OkStatus();
  if (requested == "dpbf16") {
    if (isa != CpuIsa::kAvx512Bf16) {
      return Unsupported("bf16_gemm=dpbf16 needs the avx512bf16 kernel path; this plugin runs ",
                         CpuIsaName(isa), " (set isa=avx512bf16 on a CPU with AVX512_BF16, or ",
                         "drop bf16_gemm)");
    }
    out->gemm = Bf16Gemm::kDpbf16;
    return OkStatus();
  }
  if (!requested.empty() && requested != "auto") {
    return InvalidArgument("bf16_gemm='", requested, "' is not a choice; use auto, dpbf16 or f32");
  }
  if (isa != CpuIsa::kAvx512Bf16) return OkStatus();
  out->dpbf16_over_fma = MeasureDpbf16OverFma();
  out->gemm = out->dpbf16_over_fma >= 1.0 ? Bf16Gemm::kDpbf16 : Bf16Gemm::kF32Fma;
  return OkStatus();
}

Bf16Gemm ActiveBf16Gemm() {
  return static_cast<Bf16Gemm>(g_bf16_gemm.load(std::memory_order_acquire));
}

void SetActiveBf16Gemm(Bf16Gemm gemm) {
  g_bf16_gemm.store(static_cast<int>(gemm), std::memory_order_release);
}

}  // namespace tessera::cpu
