#include "gguf/block_decode.h"

#include <cstring>

#include "base/cpu_features.h"
#include "base/dtype.h"

namespace tessera::gguf {
namespace {

[[gnu::always_inline]] inline float Half(const std::byte* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return F16ToFloat(bits);
}

[[gnu::always_inline]] inline uint8_t U8(const std::byte* p) {
  return std::to_integer<uint8_t>(*p);
}

[[gnu::always_inline]] inline void DecodeQ8_0Block(const std::byte* b, float* y) {
  const float d = Half(b);
  for (int i = 0; i < 32; ++i) y[i] = d * float(int8_t(U8(b + 2 + i)));
}

// Q4_0 / Q4_1 / Q5_0 / Q5_1: `has_min` adds m, `has_high` reads qh.
[[gnu::always_inline]] inline void DecodeSmallBlock(const std::byte* b, bool has_min,
                                                    bool has_high, float* y) {
  const float d = Half(b);
  const float m = has_min ? Half(b + 2) : 0.0f;
  size_t pos = has_min ? 4 : 2;
  uint32_t qh = 0;
  if (has_high) {
    std::memcpy(&qh, b + pos, 4);
    pos += 4;
  }
  const std::byte* qs = b + pos;
  // Without a min the value is centred: Q4_0 subtracts 8, Q5_0 16.
  const int offset = has_min ? 0 : (has_high ? 16 : 8);
  for (int i = 0; i < 16; ++i) {
    int lo = U8(qs + i) & 15;
    int hi = U8(qs + i) >> 4;
    if (has_high) {
      lo |= int((qh >> i) & 1) << 4;
      hi |= int((qh >> (i + 16)) & 1) << 4;
    }
    y[i] = d * float(lo - offset) + m;
    y[i + 16] = d * float(hi - offset) + m;
  }
}

// The 6-bit scale and min of K-quant sub-block j (0..7).
[[gnu::always_inline]] inline void ScaleMin(const std::byte* scales, int j, int* sc, int* mn) {
  if (j < 4) {
    *sc = U8(scales + j) & 63;
    *mn = U8(scales + j + 4) & 63;
  } else {
    *sc = (U8(scales + j + 4) & 15) | ((U8(scales + j - 4) >> 6) << 4);
    *mn = (U8(scales + j + 4) >> 4) | ((U8(scales + j) >> 6) << 4);
  }
}

// Q4_K, or Q5_K when `has_high`.
[[gnu::always_inline]] inline void DecodeQ45KBlock(const std::byte* b, bool has_high,
                                                   float* y) {
  const float d = Half(b);
  const float dmin = Half(b + 2);
  const std::byte* scales = b + 4;
  const std::byte* qh = b + 16;
  const std::byte* qs = b + (has_high ? 48 : 16);
  for (int pair = 0; pair < 4; ++pair) {
    int sc0, mn0, sc1, mn1;
    ScaleMin(scales, 2 * pair, &sc0, &mn0);
    ScaleMin(scales, 2 * pair + 1, &sc1, &mn1);
    const float d0 = d * float(sc0), m0 = dmin * float(mn0);
    const float d1 = d * float(sc1), m1 = dmin * float(mn1);
    const std::byte* q = qs + 32 * pair;
    float* out = y + 64 * pair;
    for (int l = 0; l < 32; ++l) {
      int lo = U8(q + l) & 15;
      int hi = U8(q + l) >> 4;
      if (has_high) {
        lo |= ((U8(qh + l) >> (2 * pair)) & 1) << 4;
        hi |= ((U8(qh + l) >> (2 * pair + 1)) & 1) << 4;
      }
      out[l] = d0 * float(lo) - m0;
      out[l + 32] = d1 * float(hi) - m1;
    }
  }
}

[[gnu::always_inline]] inline void DecodeQ6KBlock(const std::byte* b, float* y) {
  const std::byte* ql = b;
  const std::byte* qh = b + 128;
  const std::byte* sc = b + 192;
  const float d = Half(b + 208);
  for (int half = 0; half < 2; ++half) {
    const std::byte* l4 = ql + 64 * half;
    const std::byte* h2 = qh + 32 * half;
    float* out = y + 128 * half;
    // Element 32k + l: low 4 bits from byte l (+32 for odd k; the high
    // nibble for k >= 2), high 2 bits from bits 2k of qh byte l, the scale
    // of its 16-element run. l innermost, so the loop vectorises.
    for (int k = 0; k < 4; ++k) {
      const std::byte* lo_bytes = l4 + 32 * (k & 1);
      const int shift = k < 2 ? 0 : 4;
      for (int run = 0; run < 2; ++run) {
        const float ds = d * float(int8_t(U8(sc + 8 * half + 2 * k + run)));
        for (int l = 16 * run; l < 16 * run + 16; ++l) {
          const int low = (U8(lo_bytes + l) >> shift) & 15;
          const int high = (U8(h2 + l) >> (2 * k)) & 3;
          out[32 * k + l] = ds * float((low | (high << 4)) - 32);
        }
      }
    }
  }
}

[[gnu::always_inline]] inline void DecodeRowBody(TensorType type, const std::byte* in,
                                                 int64_t elements, float* out) {
  switch (type) {
    case TensorType::kF32:
      std::memcpy(out, in, size_t(elements) * 4);
      return;
    case TensorType::kF16:
      for (int64_t i = 0; i < elements; ++i) out[i] = Half(in + 2 * i);
      return;
    case TensorType::kBF16:
      for (int64_t i = 0; i < elements; ++i) {
        uint16_t bits;
        std::memcpy(&bits, in + 2 * i, 2);
        out[i] = Bf16ToFloat(bits);
      }
      return;
    default:
      break;
  }
  const int64_t block = BlockElements(type);
  const size_t bytes = BlockBytes(type);
  for (int64_t i = 0; i < elements / block; ++i) {
    const std::byte* b = in + size_t(i) * bytes;
    float* y = out + i * block;
    switch (type) {
      case TensorType::kQ8_0:
        DecodeQ8_0Block(b, y);
        break;
      case TensorType::kQ4_0:
        DecodeSmallBlock(b, false, false, y);
        break;
      case TensorType::kQ4_1:
        DecodeSmallBlock(b, true, false, y);
        break;
      case TensorType::kQ5_0:
        DecodeSmallBlock(b, false, true, y);
        break;
      case TensorType::kQ5_1:
        DecodeSmallBlock(b, true, true, y);
        break;
      case TensorType::kQ4_K:
        DecodeQ45KBlock(b, false, y);
        break;
      case TensorType::kQ5_K:
        DecodeQ45KBlock(b, true, y);
        break;
      case TensorType::kQ6_K:
        DecodeQ6KBlock(b, y);
        break;
      default:
        break;
    }
  }
}

// Compiled twice on x86-64 (AVX2 and the baseline, picked per call): the
// loops above vectorise 8 wide with AVX2, which halved the decode share of
// loading a K-quant GGUF. No FMA in the AVX2 copy, so both give the same
// floats.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) void DecodeRowAvx2(TensorType type, const std::byte* in,
                                                   int64_t elements, float* out) {
  DecodeRowBody(type, in, elements, out);
}
#endif
void DecodeRowBaseline(TensorType type, const std::byte* in, int64_t elements, float* out) {
  DecodeRowBody(type, in, elements, out);
}

}  // namespace

void DecodeRow(TensorType type, const std::byte* in, int64_t elements,
               float* out) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (HostHasAvx2()) {
    DecodeRowAvx2(type, in, elements, out);
    return;
  }
#endif
  DecodeRowBaseline(type, in, elements, out);
}

}  // namespace tessera::gguf
