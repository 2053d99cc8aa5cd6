// The per-ISA kernels of linear v3 (w8a8, ABI 1.5) and v4 (w4a8, 1.6):
// int8 (or packed 4-bit) weights times int8 activations, the computations
// of llama.cpp's Q8_0 x Q8_0 and Q4_0 x Q8_0 dots. One
// table of plain functions per instruction-set path (cpu_isa.h), each
// compiled for that path only (GCC target pragmas in
// ops_linear_w8a8_kernels_<isa>.cc).
//
// `quantize` turns x f32 [rows, K] (row stride ldx) into q int8 [rows, K]
// (row stride ldq) and s f32 [rows, K / G] (row stride lds) exactly as the
// contract says (tessera_plugin.h, linear v3): per block of G, a = max |x|,
// s = a / 127, q = nearest-even(x * (127 / a)) in f32, 0 when a == 0. Every
// path's quantize gives bit-identical q and s.
//
// `block` computes, for m < rows and j < n,
//   out[m * ldo + j] = sum_b xs[m * ldxs + b] * ws[j * ldws + b] *
//                      (sum_{k in block b} xq[m * ldxq + k] * w[j * ldw + k])
// with the inner sums exact in int32, xq/w int8 and xs/ws f32 row-major
// with unit innermost strides, out f32 [rows, n]. A path's block handles
// G % group_multiple == 0 (any K that G divides); other group sizes go to
// the scalar block (any G). Nothing is read past a row's K elements.
//
// `block_w4` (linear v4, w4a8, ABI 1.6) is `block` with 4-bit weights: w
// points to packed bytes [n, ldw] (ldw in bytes, >= K / 2), each block of
// 32 weights 16 bytes, byte j holding weight j (low nibble) and j + 16
// (high nibble), a nibble u meaning u - 8 (Q4_0's layout), and ws holds
// f16 scales' bits:
//   out[m * ldo + j] = sum_b xs[m, b] * f32(ws[j, b]) *
//                      (sum_{k in b} xq[m, k] * (nibble(j, k) - 8)).
// Every path's block_w4 takes K % 32 == 0 and G % 32 == 0 (the contract's).
// Where a table has `permute_w4`, block_w4 reads xq as permute_w4(xq, ldq,
// rows, K) left it (in place, once per call: an x order that spares the
// kernel a shuffle per weight step); quantize's output is what it permutes.
// `block_w6` (linear v5, w6a8, ABI 1.8) is `block` with Q6_K weights: w
// points to bytes [n, ldw] (ldw >= K / 256 * 208), each super-block of 256
// weights 208 bytes (ql[128], qh[64], i8 sc[16]: the contract's layout),
// wd to the super-blocks' f16 d's bits [n, ldwd]:
//   out[m * ldo + j] = sum_b xs[m, b] * f32(wd[j, c(b)]) *
//                      (sum_{k in b} xq[m, k] * sc(j, k / 16) * (u(j, k) - 32)).
// The scalar block_w6 takes G in {32, 64, 128, 256}; the SIMD ones G == 32
// (w6_group), the only G the host uses (other G go to the scalar one).
// Pure; thread-safe.
#ifndef TESSERA_PLUGINS_CPU_OPS_LINEAR_W8A8_KERNELS_H_
#define TESSERA_PLUGINS_CPU_OPS_LINEAR_W8A8_KERNELS_H_

#include <cstdint>

#include "cpu_isa.h"

namespace tessera::cpu {

using QuantizeW8A8Fn = void (*)(const float* x, int64_t ldx, int64_t rows, int64_t k,
                                int64_t group, int8_t* q, int64_t ldq, float* s, int64_t lds);
using LinearW8A8BlockFn = void (*)(const int8_t* xq, int64_t ldxq, const float* xs,
                                   int64_t ldxs, int64_t rows, const int8_t* w, int64_t ldw,
                                   const float* ws, int64_t ldws, int64_t n, int64_t k,
                                   int64_t group, float* out, int64_t ldo);

using LinearW4A8BlockFn = void (*)(const int8_t* xq, int64_t ldxq, const float* xs,
                                   int64_t ldxs, int64_t rows, const int8_t* w, int64_t ldw,
                                   const uint16_t* ws, int64_t ldws, int64_t n, int64_t k,
                                   int64_t group, float* out, int64_t ldo);

using LinearW6A8BlockFn = void (*)(const int8_t* xq, int64_t ldxq, const float* xs,
                                   int64_t ldxs, int64_t rows, const uint8_t* w, int64_t ldw,
                                   const uint16_t* wd, int64_t ldwd, int64_t n, int64_t k,
                                   int64_t group, float* out, int64_t ldo);

// Bytes of a linear v5 super-block (256 weights) without its f16 d.
inline constexpr int64_t kW6BlockBytes = 208;

struct LinearW8A8Kernels {
  const char* name = "";  // "scalar", "avx2", "avx512", "avx512vnni"
  QuantizeW8A8Fn quantize = nullptr;
  LinearW8A8BlockFn block = nullptr;
  int64_t group_multiple = 1;  // block needs G % group_multiple == 0
  LinearW4A8BlockFn block_w4 = nullptr;  // 4-bit weights (packed bytes)
  void (*permute_w4)(int8_t* q, int64_t ldq, int64_t rows, int64_t k) = nullptr;
  LinearW6A8BlockFn block_w6 = nullptr;  // Q6_K weights (super-block bytes)
  int64_t w6_group = 0;                  // the G block_w6 takes (0: any)
};

// The table of `isa` (which must be CpuSupports-ed by the caller's CPU): on
// the avx512 paths the VNNI kernels (vpdpbusd) when CpuHasAvx512Vnni(),
// else the AVX-512BW ones (vpmaddubsw + vpmaddwd).
const LinearW8A8Kernels& LinearW8A8KernelsFor(CpuIsa isa);

const LinearW8A8Kernels& ScalarLinearW8A8Kernels();
#if defined(__x86_64__) && defined(__GNUC__)
const LinearW8A8Kernels& Avx2LinearW8A8Kernels();
const LinearW8A8Kernels& Avx512LinearW8A8Kernels();      // AVX-512 F/BW/VL
const LinearW8A8Kernels& Avx512VnniLinearW8A8Kernels();  // plus AVX512_VNNI
// The AVX2 block_w6 (G == 32) and the AVX-512BW one both AVX-512 tables
// use (ops_linear_w6a8_kernels_avx512.cc).
void Avx512VnniLinearW6A8Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                               int64_t rows, const uint8_t* w, int64_t ldw, const uint16_t* wd,
                               int64_t ldwd, int64_t n, int64_t k, int64_t group, float* out,
                               int64_t ldo);
void Avx512LinearW6A8Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                           int64_t rows, const uint8_t* w, int64_t ldw, const uint16_t* wd,
                           int64_t ldwd, int64_t n, int64_t k, int64_t group, float* out,
                           int64_t ldo);
void Avx2LinearW6A8Block(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                         int64_t rows, const uint8_t* w, int64_t ldw, const uint16_t* wd,
                         int64_t ldwd, int64_t n, int64_t k, int64_t group, float* out,
                         int64_t ldo);
#endif

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPS_LINEAR_W8A8_KERNELS_H_
