#include "model/rope.h"

#include <cmath>
#include <numbers>

namespace tessera::model {

std::vector<double> ComputeRopeInvFreq(int64_t rotary_dim, double theta,
                                       const RopeScaling& scaling) {
  const int64_t half = rotary_dim / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[i] = 1.0 / std::pow(theta, double(2 * i) / double(rotary_dim));
  }
  if (scaling.type != RopeScaling::Type::kLlama3) return inv_freq;

  const double old_context =
      static_cast<double>(scaling.original_max_position_embeddings);
  const double low_freq_wavelen = old_context / scaling.low_freq_factor;
  const double high_freq_wavelen = old_context / scaling.high_freq_factor;
  for (double& f : inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen > low_freq_wavelen) {
      f = f / scaling.factor;
    } else if (wavelen >= high_freq_wavelen) {
      const double smooth =
          (old_context / wavelen - scaling.low_freq_factor) /
          (scaling.high_freq_factor - scaling.low_freq_factor);
      f = (1.0 - smooth) * f / scaling.factor + smooth * f;
    }
  }
  return inv_freq;
}

std::vector<float> RopeInvFreq(const ModelConfig& config) {
  std::vector<double> wide = ComputeRopeInvFreq(
      config.head_dim, config.rope_theta, config.rope_scaling);
  return std::vector<float>(wide.begin(), wide.end());
}

}  // namespace tessera::model
