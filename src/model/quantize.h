// Weight-only int8 quantisation of linear weights, as linear v2 (ABI 1.1)
// consumes them: symmetric, per row and per group of G consecutive inputs,
//   scale[n, g] = max_{k in group g} |w[n, k]| / 127   (1 when all are 0)
//   q[n, k]     = round_half_even(w[n, k] / scale[n, k / G]), in [-127, 127]
// so that w ~= q * scale with |error| <= scale / 2 per element. G == K is
// one scale per output channel. Pure functions; thread-safe.
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

}  // namespace tessera::model

#endif  // TESSERA_MODEL_QUANTIZE_H_
