// The portable (scalar) kernels of linear v3 (ops_linear_w8a8_kernels.h):
// built for the baseline ISA, no intrinsics; any group size. Also
// LinearW8A8KernelsFor, the per-path table.
#include <algorithm>
#include <cmath>

#include <vector>

#include "kit/half.h"
#include "ops_linear_w8a8_kernels.h"

namespace tessera::cpu {
namespace {

void QuantizeScalar(const float* x, int64_t ldx, int64_t rows, int64_t k, int64_t group,
                    int8_t* q, int64_t ldq, float* s, int64_t lds) {
  for (int64_t m = 0; m < rows; ++m) {
    const float* xr = x + m * ldx;
    int8_t* qr = q + m * ldq;
    for (int64_t b0 = 0, b = 0; b0 < k; b0 += group, ++b) {
      float amax = 0.0f;
      for (int64_t i = b0; i < b0 + group; ++i) amax = std::max(amax, std::fabs(xr[i]));
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
      s[m * lds + b] = amax / 127.0f;
      for (int64_t i = b0; i < b0 + group; ++i) {
        const float v = std::nearbyint(xr[i] * inv);
        qr[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      }
    }
  }
}

// Column j's outputs out[m * ldo] for every x row m, from weight row wr
// (weight(wr, i) its i-th weight as an int) and its f32 scales wsr.
template <typename WeightAt>
void BlockColumn(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
                 const int8_t* wr, const float* wsr, int64_t k, int64_t group, float* out,
                 int64_t ldo, WeightAt weight) {
  for (int64_t m = 0; m < rows; ++m) {
    const int8_t* xr = xq + m * ldxq;
    const float* xsr = xs + m * ldxs;
    float acc = 0.0f;
    for (int64_t b0 = 0, b = 0; b0 < k; b0 += group, ++b) {
      int32_t dot = 0;
      for (int64_t i = b0; i < b0 + group; ++i) dot += int32_t{xr[i]} * weight(wr, i);
      acc += xsr[b] * wsr[b] * static_cast<float>(dot);
    }
    out[m * ldo] = acc;
  }
}

void BlockScalar(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs, int64_t rows,
                 const int8_t* w, int64_t ldw, const float* ws, int64_t ldws, int64_t n,
                 int64_t k, int64_t group, float* out, int64_t ldo) {
  for (int64_t j = 0; j < n; ++j) {
    BlockColumn(xq, ldxq, xs, ldxs, rows, w + j * ldw, ws + j * ldws, k, group, out + j, ldo,
                [](const int8_t* wr, int64_t i) { return int32_t{wr[i]}; });
  }
}

// One 4-bit weight (linear v4's packing) of row `wr`: nibble - 8.
inline int32_t Weight4(const int8_t* wr, int64_t k) {
  const auto byte = static_cast<uint8_t>(wr[(k >> 5) * 16 + (k & 15)]);
  return static_cast<int32_t>((k & 16) ? byte >> 4 : byte & 0x0F) - 8;
}

void BlockScalarW4(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                   int64_t rows, const int8_t* w, int64_t ldw, const uint16_t* ws,
                   int64_t ldws, int64_t n, int64_t k, int64_t group, float* out, int64_t ldo) {
  std::vector<float> wsr(static_cast<size_t>(k / group));  // the row's scales as f32
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t b = 0; b < k / group; ++b) wsr[b] = plugin_kit::F16ToF32(ws[j * ldws + b]);
    BlockColumn(xq, ldxq, xs, ldxs, rows, w + j * ldw, wsr.data(), k, group, out + j, ldo,
                Weight4);
  }
}

// One Q6_K weight of row `wr` as sc * (u - 32) (linear v5's layout).
inline int32_t Weight6(const uint8_t* wr, int64_t k) {
  const uint8_t* blk = wr + (k >> 8) * kW6BlockBytes;
  const int64_t i = k & 255, h = i >> 7, j = (i >> 5) & 3, l = i & 31;
  const int lo = (blk[64 * h + 32 * (j & 1) + l] >> (4 * (j >> 1))) & 15;
  const int hi = (blk[128 + 32 * h + l] >> (2 * j)) & 3;
  return int32_t{static_cast<int8_t>(blk[192 + i / 16])} * ((lo | hi << 4) - 32);
}

void BlockScalarW6(const int8_t* xq, int64_t ldxq, const float* xs, int64_t ldxs,
                   int64_t rows, const uint8_t* w, int64_t ldw, const uint16_t* wd,
                   int64_t ldwd, int64_t n, int64_t k, int64_t group, float* out,
                   int64_t ldo) {
  // A block of x lies in one super-block (G divides 256): its weight
  // scale is that super-block's d.
  std::vector<float> wsr(static_cast<size_t>(k / group));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t b = 0; b < k / group; ++b) {
      wsr[b] = plugin_kit::F16ToF32(wd[j * ldwd + b * group / 256]);
    }
    BlockColumn(xq, ldxq, xs, ldxs, rows, reinterpret_cast<const int8_t*>(w + j * ldw),
                wsr.data(), k, group, out + j, ldo, [](const int8_t* wr, int64_t i) {
                  return Weight6(reinterpret_cast<const uint8_t*>(wr), i);
                });
  }
}

}  // namespace

const LinearW8A8Kernels& ScalarLinearW8A8Kernels() {
  static const LinearW8A8Kernels kernels{"scalar", &QuantizeScalar, &BlockScalar, 1,
                                         &BlockScalarW4, nullptr, &BlockScalarW6, 0};
  return kernels;
}

const LinearW8A8Kernels& LinearW8A8KernelsFor(CpuIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (isa) {
    case CpuIsa::kAvx2:
      return Avx2LinearW8A8Kernels();
    case CpuIsa::kAvx512:
    case CpuIsa::kAvx512Bf16:
      return CpuHasAvx512Vnni() ? Avx512VnniLinearW8A8Kernels() : Avx512LinearW8A8Kernels();
    default:
      break;
  }
#else
  (void)isa;
#endif
  return ScalarLinearW8A8Kernels();
}

}  // namespace tessera::cpu
