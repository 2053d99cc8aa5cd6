// Quantisation of linear weights on the host at load.
//
// int8, as linear v2 / v3 consume it: symmetric, per row and per group of
// G consecutive inputs,
//   scale[n, g] = max_{k in group g} |w[n, k]| / 127   (1 when all are 0)
//   q[n, k]     = round_half_even(w[n, k] / scale[n, k / G]), in [-127, 127]
// so that w ~= q * scale with |error| <= scale / 2 per element. G == K is
// one scale per output channel.
//
// 4-bit, as linear v4 (ABI 1.6) consumes it: Q4_0's numbers, an f16 scale
// per group of 32 (Q4_0 dequantised and quantised again gives back its
// nibbles and scales exactly):
//   m           = the w of the group with the largest |w| (sign kept)
//   scale[n, g] = f16(m / -8) (1 when all are 0), so m is about nibble 0
//   u[n, k]     = min(15, floor(w / scale + 8.5)) with that f16 scale, the
//                 weight (u - 8) scale
// packed per 32-block as linear v4 says (byte j: weight j low nibble, weight
// j + 16 high). Pure functions; thread-safe.
#ifndef TESSERA_MODEL_QUANTIZE_H_
#define TESSERA_MODEL_QUANTIZE_H_

#include <cstdint>

namespace tessera::model {

// The default group size of `--quantization int8` (see docs/MODELS.md for
// the accuracy / speed measurements behind it).
inline constexpr int64_t kDefaultInt8GroupSize = 32;

// The group size used for a weight with `k` inputs when `requested` is
// asked for: `requested` when it is >= 1 and divides k, else k (one scale
// per output channel). k == 0 gives 1.
int64_t Int8GroupFor(int64_t k, int64_t requested);

// Quantises `rows` rows of `k` floats (src, row-major, contiguous) with
// group size `group` (>= 1, divides k): q [rows, k] and scales
// [rows, k / group], both row-major and contiguous.
void QuantizeInt8Rows(const float* src, int64_t rows, int64_t k, int64_t group,
                      int8_t* q, float* scales);

// The group size of `--quantization int4` (Q4_0's block); a weight's K must
// be a multiple of it to be stored 4-bit.
inline constexpr int64_t kInt4GroupSize = 32;

// Quantises `rows` rows of `k` floats (src, row-major, contiguous; k % 32
// == 0) to 4 bits: packed [rows, k / 2] bytes and f16 scales' bits
// [rows, k / 32], both row-major and contiguous.
void QuantizeInt4Rows(const float* src, int64_t rows, int64_t k, uint8_t* packed,
                      uint16_t* scales);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_QUANTIZE_H_
