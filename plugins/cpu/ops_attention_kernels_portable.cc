// The portable paged-attention block kernels (ops_attention_kernels.h):
// plain loops shaped so GCC vectorises them for the build's baseline ISA
// (the scores are an outer product over d, so no reduction needs
// reassociation), with std::exp. They serve the scalar path and are the
// reference the AVX2 and AVX-512 kernels are tested against.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops_attention_kernels.h"

namespace tessera::cpu {
namespace {

constexpr int64_t kB = kAttentionKeyBlock;

void Scores(const float* q, int64_t mq, int64_t d, const float* kt, float* s) {
  for (int64_t i = 0; i < mq; ++i) {
    float row[kB] = {};
    const float* qi = q + i * d;
    for (int64_t c = 0; c < d; ++c) {
      const float a = qi[c];
      const float* k = kt + c * kB;
      for (int64_t j = 0; j < kB; ++j) row[j] += a * k[j];
    }
    std::copy(row, row + kB, s + i * kB);
  }
}

void ScoresFromRows(const float* q, int64_t mq, int64_t d, const float* k, float* s) {
  for (int64_t i = 0; i < mq; ++i) {
    for (int64_t j = 0; j < kB; ++j) {
      float lanes[8] = {};
      int64_t c = 0;
      for (; c + 8 <= d; c += 8) {
        for (int u = 0; u < 8; ++u) lanes[u] += q[i * d + c + u] * k[j * d + c + u];
      }
      float sum = 0.0f;
      for (; c < d; ++c) sum += q[i * d + c] * k[j * d + c];
      for (float v : lanes) sum += v;
      s[i * kB + j] = sum;
    }
  }
}

void SoftmaxAccumulate(float* s, int64_t mq, const int32_t* lo, const int32_t* hi,
                       const float* v, int64_t d, float* m, float* l, float* acc) {
  for (int64_t i = 0; i < mq; ++i) {
    if (lo[i] >= hi[i]) continue;
    float* si = s + i * kB;
    float block_max = -std::numeric_limits<float>::infinity();
    for (int32_t j = lo[i]; j < hi[i]; ++j) block_max = std::max(block_max, si[j]);
    const float new_max = std::max(m[i], block_max);
    const float correction = std::exp(m[i] - new_max);  // 0 when m = -inf
    float sum = 0.0f;
    for (int64_t j = 0; j < kB; ++j) {
      const bool valid = j >= lo[i] && j < hi[i];
      si[j] = valid ? std::exp(si[j] - new_max) : 0.0f;
      sum += si[j];
    }
    float* out = acc + i * d;
    if (correction != 1.0f) {
      for (int64_t c = 0; c < d; ++c) out[c] *= correction;
    }
    for (int32_t j = lo[i]; j < hi[i]; ++j) {
      const float p = si[j];
      const float* vj = v + j * d;
      for (int64_t c = 0; c < d; ++c) out[c] += p * vj[c];
    }
    l[i] = l[i] * correction + sum;
    m[i] = new_max;
  }
}

void TransposeKeys(const float* k, int64_t d, float* kt) {
  for (int64_t j = 0; j < kB; ++j) {
    for (int64_t c = 0; c < d; ++c) kt[c * kB + j] = k[j * d + c];
  }
}

void WidenBf16(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = uint32_t{src[i]} << 16;
    std::memcpy(dst + i, &bits, sizeof(bits));
  }
}

}  // namespace

const AttentionKernels& PortableAttentionKernels() {
  static const AttentionKernels kernels{Scores, ScoresFromRows, SoftmaxAccumulate, TransposeKeys,
                                        WidenBf16};
  return kernels;
}

const AttentionKernels& AttentionKernelsFor(CpuIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa == CpuIsa::kAvx512 || isa == CpuIsa::kAvx512Bf16) return Avx512AttentionKernels();
  if (isa == CpuIsa::kAvx2) return Avx2AttentionKernels();
#endif
  (void)isa;
  return PortableAttentionKernels();
}

}  // namespace tessera::cpu
