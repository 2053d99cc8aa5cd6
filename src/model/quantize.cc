#include "model/quantize.h"

#include "base/cpu_features.h"
#include "base/dtype.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tessera::model {
namespace {
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
}  // namespace

int64_t Int8GroupFor(int64_t k, int64_t requested) {
  if (k <= 0) return 1;
  if (requested >= 1 && k % requested == 0) return requested;
  return k;
}

namespace {

[[gnu::always_inline]] inline void QuantizeInt8Body(const float* src, int64_t rows, int64_t k,
                                                    int64_t group, int8_t* q, float* scales) {
  // Written so the compiler vectorizes both loops on every x86 path: the
  // largest |w| compared as the integer bits of |w| (their order for
  // non-negative floats), and round-half-to-even (the default rounding
  // mode) by adding 1.5 * 2^23, whose low mantissa bits are then the
  // rounded value (exact for |v| < 2^22; larger values only arise from a
  // non-finite group and are clamped like the rest).
  const int64_t groups = k / group;
  const int32_t magic_bits = std::bit_cast<int32_t>(kRoundMagic);
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = src + r * k;
    int8_t* qr = q + r * k;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * group, end = begin + group;
      int32_t amax_bits = 0;
      for (int64_t i = begin; i < end; ++i) {
        const int32_t bits = std::bit_cast<int32_t>(w[i]) & 0x7fffffff;
        amax_bits = bits > amax_bits ? bits : amax_bits;
      }
      const float amax = std::bit_cast<float>(amax_bits);
      const float scale = amax > 0.0f && std::isfinite(amax) ? amax / 127.0f : 1.0f;
      const float inv = 1.0f / scale;
      for (int64_t i = begin; i < end; ++i) {
        int32_t v = std::bit_cast<int32_t>(w[i] * inv + kRoundMagic) - magic_bits;
        v = v < -127 ? -127 : v;
        v = v > 127 ? 127 : v;
        qr[i] = static_cast<int8_t>(v);
      }
      scales[r * groups + g] = scale;
    }
  }
}

[[gnu::always_inline]] inline void QuantizeInt4Body(const float* src, int64_t rows, int64_t k,
                                                    uint8_t* packed, uint16_t* scales) {
  // Written so the compiler vectorizes the max and the nibble loops (as
  // QuantizeInt8Rows: |w| compared as integer bits; the floor is a
  // truncating conversion of a value clamped to [0, 15], NaN to 0).
  const int64_t groups = k / kInt4GroupSize;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* w = src + r * k + g * kInt4GroupSize;
      int32_t amax_bits = 0;
      for (int64_t i = 0; i < kInt4GroupSize; ++i) {
        const int32_t bits = std::bit_cast<int32_t>(w[i]) & 0x7fffffff;
        amax_bits = bits > amax_bits ? bits : amax_bits;
      }
      float m = 0.0f;  // the first w with the largest |w|, sign kept
      for (int64_t i = 0; i < kInt4GroupSize; ++i) {
        if ((std::bit_cast<int32_t>(w[i]) & 0x7fffffff) == amax_bits) {
          m = w[i];
          break;
        }
      }
      const float amax = std::bit_cast<float>(amax_bits);
      // The f16 scale (f16's largest finite value bounds it); u from it.
      float scale = amax > 0.0f && std::isfinite(amax) ? m / -8.0f : 1.0f;
      scale = std::clamp(scale, -65504.0f, 65504.0f);
      const uint16_t scale16 = FloatToF16(scale);
      scale = F16ToFloat(scale16);
      const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
      uint8_t u[kInt4GroupSize];
      for (int64_t i = 0; i < kInt4GroupSize; ++i) {
        float v = w[i] * inv + 8.5f;
        v = v >= 0.0f ? v : 0.0f;  // also NaN -> 0
        v = v <= 15.0f ? v : 15.0f;
        u[i] = static_cast<uint8_t>(static_cast<int32_t>(v));
      }
      uint8_t* out = packed + r * (k / 2) + g * (kInt4GroupSize / 2);
      for (int64_t j = 0; j < kInt4GroupSize / 2; ++j) {
        out[j] = static_cast<uint8_t>(u[j] | (u[j + 16] << 4));
      }
      scales[r * groups + g] = scale16;
    }
  }
}

// Both quantizers are compiled twice on x86-64 (AVX2 and the baseline,
// picked per call; no FMA, so both give the same bytes): loading a GGUF
// that needs re-quantizing spends most of its CPU time here.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) void QuantizeInt8Avx2(const float* src, int64_t rows, int64_t k,
                                                      int64_t group, int8_t* q, float* scales) {
  QuantizeInt8Body(src, rows, k, group, q, scales);
}
__attribute__((target("avx2"))) void QuantizeInt4Avx2(const float* src, int64_t rows, int64_t k,
                                                      uint8_t* packed, uint16_t* scales) {
  QuantizeInt4Body(src, rows, k, packed, scales);
}
#endif
void QuantizeInt8Baseline(const float* src, int64_t rows, int64_t k, int64_t group, int8_t* q,
                          float* scales) {
  QuantizeInt8Body(src, rows, k, group, q, scales);
}
void QuantizeInt4Baseline(const float* src, int64_t rows, int64_t k, uint8_t* packed,
                          uint16_t* scales) {
  QuantizeInt4Body(src, rows, k, packed, scales);
}

}  // namespace

void QuantizeInt8Rows(const float* src, int64_t rows, int64_t k, int64_t group,
                      int8_t* q, float* scales) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (HostHasAvx2()) {
    QuantizeInt8Avx2(src, rows, k, group, q, scales);
    return;
  }
#endif
  QuantizeInt8Baseline(src, rows, k, group, q, scales);
}

void QuantizeInt4Rows(const float* src, int64_t rows, int64_t k, uint8_t* packed,
                      uint16_t* scales) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (HostHasAvx2()) {
    QuantizeInt4Avx2(src, rows, k, packed, scales);
    return;
  }
#endif
  QuantizeInt4Baseline(src, rows, k, packed, scales);
}

}  // namespace tessera::model
