#include "model/quantize.h"

#include <algorithm>
#include <cmath>

namespace tessera::model {

int64_t Int8GroupFor(int64_t k, int64_t requested) {
  if (k <= 0) return 1;
  if (requested >= 1 && k % requested == 0) return requested;
  return k;
}

void QuantizeInt8Rows(const float* src, int64_t rows, int64_t k, int64_t group,
                      int8_t* q, float* scales) {
  const int64_t groups = k / group;
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = src + r * k;
    int8_t* qr = q + r * k;
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t begin = g * group, end = begin + group;
      float amax = 0.0f;
      for (int64_t i = begin; i < end; ++i) amax = std::max(amax, std::fabs(w[i]));
      const float scale = amax > 0.0f && std::isfinite(amax) ? amax / 127.0f : 1.0f;
      const float inv = 1.0f / scale;
      for (int64_t i = begin; i < end; ++i) {
        const float v = std::nearbyint(w[i] * inv);  // round half to even
        qr[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      }
      scales[r * groups + g] = scale;
    }
  }
}

}  // namespace tessera::model
