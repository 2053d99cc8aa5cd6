// The per-ISA kernels of linear v2 (weight-only int8, ABI 1.1): one table
// of plain functions per instruction-set path (cpu_isa.h), each compiled
// for that path only (GCC target pragmas in ops_linear_w8_kernels_<isa>.cc).
//
// `block` computes, for m < rows and j < n,
//   out[m * ldo + j] = sum_{k < K} x[m * ldx + k] * w[j * ldw + k] * s[j * lds + k / G]
// with x f32 [rows, K], w int8 [n, K] and s f32 [n, K / G] row-major with
// unit innermost strides, out f32 [rows, n]. It streams the int8 rows of 4
// outputs at a time, widening them in registers (sign-extend, convert) and
// applying the group's scale before the FMA (after the sum when G == K),
// so each weight byte is read once per tile of x rows: the decode path.
// A path's block handles G == K and G % group_multiple == 0; other group
// sizes go to the scalar block (which takes any G). Nothing is read past a
// row's K elements.
//
// `dequant` writes dst f32 [n, K] (row stride K) = w * s, for the prefill
// path (the driver then runs the f32 linear kernel on the dequantised panel,
// reusing it across every x row of the block).
// Pure; thread-safe.
#ifndef TESSERA_PLUGINS_CPU_OPS_LINEAR_W8_KERNELS_H_
#define TESSERA_PLUGINS_CPU_OPS_LINEAR_W8_KERNELS_H_

#include <cstdint>

#include "cpu_isa.h"

namespace tessera::cpu {

using LinearW8BlockFn = void (*)(const float* x, int64_t ldx, int64_t rows, const int8_t* w,
                                 int64_t ldw, const float* s, int64_t lds, int64_t n, int64_t k,
                                 int64_t group, float* out, int64_t ldo);
using DequantW8Fn = void (*)(const int8_t* w, int64_t ldw, const float* s, int64_t lds,
                             int64_t n, int64_t k, int64_t group, float* dst);

struct LinearW8Kernels {
  LinearW8BlockFn block = nullptr;
  int64_t group_multiple = 1;  // block needs G == K or G % group_multiple == 0
  DequantW8Fn dequant = nullptr;
};

// The table of `isa` (which must be CpuSupports-ed by the caller's CPU).
const LinearW8Kernels& LinearW8KernelsFor(CpuIsa isa);

const LinearW8Kernels& ScalarLinearW8Kernels();
#if defined(__x86_64__) && defined(__GNUC__)
const LinearW8Kernels& Avx2LinearW8Kernels();
const LinearW8Kernels& Avx512LinearW8Kernels();
#endif

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPS_LINEAR_W8_KERNELS_H_
