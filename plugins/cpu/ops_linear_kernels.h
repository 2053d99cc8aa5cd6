// The per-ISA block kernels of the linear op: one table of plain functions
// per instruction-set path (cpu_isa.h), each compiled for that path only
// (GCC target pragmas in ops_linear_kernels_<isa>.cc), so one build runs on
// any x86-64 and uses what the CPU has.
//
// Every kernel computes, for m < rows and j < n,
//   out[m * ldo + j] = sum_{k < K} x[m * ldx + k] * w[j * ldw + k]   (f32)
// with x [rows, K] and w [n, K] row-major with unit innermost stride (w is
// the op's weight, any row stride), out f32 [rows, n]. Any rows, n, K >= 0
// (tails are masked or handled scalar; nothing is read past a row's K
// elements). Inside, groups of 4 weight rows are loaded once and meet every
// x row (tiles of a few rows) while they sit in L1, so calls with many x
// rows reuse each weight panel from cache (the avx512bf16 `bf16_bf16`
// kernel instead packs 64-row weight panels for blocks of 48+ rows: see
// ops_linear_kernels_avx512bf16.cc). Pure; thread-safe.
//
// x is f32 except in `bf16_bf16`, where it is bf16 (uint16 bits) and the
// products use the bf16 dot-product instruction (f32 accumulation). A NULL
// entry means the path has no such kernel (the caller then converts x to
// f32 and uses the f32-x kernel of the same weight type).
#ifndef TESSERA_PLUGINS_CPU_OPS_LINEAR_KERNELS_H_
#define TESSERA_PLUGINS_CPU_OPS_LINEAR_KERNELS_H_

#include <cstdint>

#include "cpu_isa.h"

namespace tessera::cpu {

template <typename XT, typename WT>
using LinearBlockFn = void (*)(const XT* x, int64_t ldx, int64_t rows, const WT* w, int64_t ldw,
                               int64_t n, int64_t k, float* out, int64_t ldo);

struct LinearKernels {
  LinearBlockFn<float, float> f32_f32 = nullptr;          // x f32, w f32
  LinearBlockFn<float, uint16_t> f32_bf16 = nullptr;      // x f32, w bf16 bits
  LinearBlockFn<float, uint16_t> f32_f16 = nullptr;       // x f32, w f16 bits
  LinearBlockFn<uint16_t, uint16_t> bf16_bf16 = nullptr;  // x bf16, w bf16
};

// The table of `isa` (which must be CpuSupports-ed by the caller's CPU).
const LinearKernels& LinearKernelsFor(CpuIsa isa);

// Per-path tables, defined in ops_linear_kernels_<isa>.cc. The x86 ones
// exist only on x86-64 builds.
const LinearKernels& ScalarLinearKernels();
#if defined(__x86_64__) && defined(__GNUC__)
const LinearKernels& Avx2LinearKernels();
const LinearKernels& Avx512LinearKernels();
const LinearKernels& Avx512Bf16LinearKernels();
#endif

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPS_LINEAR_KERNELS_H_
