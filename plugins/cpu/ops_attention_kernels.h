// The per-ISA block kernels of paged attention (ops_attention.cc): one
// table of plain functions per instruction-set path, like the linear op's
// (ops_linear_kernels.h). The op works on f32 tiles in the calling thread's
// scratch: a block of query rows Q [mq, d] (already multiplied by the
// softmax scale), a block of kAttentionKeyBlock keys, transposed, Kt [d,
// kAttentionKeyBlock], and their values V [kAttentionKeyBlock, d], all
// row-major and dense. Pure; thread-safe.
#ifndef TESSERA_PLUGINS_CPU_OPS_ATTENTION_KERNELS_H_
#define TESSERA_PLUGINS_CPU_OPS_ATTENTION_KERNELS_H_

#include <cstdint>

#include "cpu_isa.h"

namespace tessera::cpu {

// Keys per block: scores of one query row over a block are 2 AVX-512
// vectors.
inline constexpr int64_t kAttentionKeyBlock = 32;
// Most query rows scores_from_rows takes.
inline constexpr int64_t kRowScoreMaxRows = 4;

struct AttentionKernels {
  // s[i * kAttentionKeyBlock + j] = sum_{c < d} q[i * d + c] * kt[c *
  // kAttentionKeyBlock + j] for i < mq, j < kAttentionKeyBlock.
  void (*scores)(const float* q, int64_t mq, int64_t d, const float* kt, float* s) = nullptr;
  // The same scores from untransposed key rows k [kAttentionKeyBlock, d]
  // (one dot product per row and key), for mq <= kRowScoreMaxRows: cheaper
  // than transposing a block for a decode's few query rows.
  void (*scores_from_rows)(const float* q, int64_t mq, int64_t d, const float* k,
                           float* s) = nullptr;
  // One online-softmax step of row i over the block's scores
  // s[i * kAttentionKeyBlock + j], valid for j in [lo[i], hi[i]) (others
  // ignored), with running max m[i], sum l[i] and output acc [mq, d]:
  //   m' = max(m, max_j s), acc = acc * exp(m - m') + sum_j exp(s_j - m') V[j],
  //   l = l * exp(m - m') + sum_j exp(s_j - m').
  // Rows with lo[i] >= hi[i] are unchanged. s is overwritten.
  void (*softmax_accumulate)(float* s, int64_t mq, const int32_t* lo, const int32_t* hi,
                             const float* v, int64_t d, float* m, float* l, float* acc) = nullptr;
  // kt[c * kAttentionKeyBlock + j] = k[j * d + c] for j < kAttentionKeyBlock,
  // c < d: a block of f32 key rows [kAttentionKeyBlock, d] transposed.
  void (*transpose_keys)(const float* k, int64_t d, float* kt) = nullptr;
  // dst[i] = bf16 src[i] widened to f32, i < n.
  void (*widen_bf16)(const uint16_t* src, int64_t n, float* dst) = nullptr;
};

// The table of `isa` (which must be CpuSupports-ed by the caller's CPU).
const AttentionKernels& AttentionKernelsFor(CpuIsa isa);

// Per-path tables (ops_attention_kernels_<isa>.cc). The portable one serves
// the scalar path (GCC vectorises its loops for the baseline ISA); the AVX2
// one the avx2 path; the AVX-512 one avx512 and avx512bf16.
const AttentionKernels& PortableAttentionKernels();
#if defined(__x86_64__) && defined(__GNUC__)
const AttentionKernels& Avx2AttentionKernels();
const AttentionKernels& Avx512AttentionKernels();
#endif

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPS_ATTENTION_KERNELS_H_
