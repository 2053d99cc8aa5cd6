#include "model/random_weights.h"

namespace tessera::model {

uint64_t TensorStreamKey(uint64_t seed, std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return SplitMix64(seed ^ SplitMix64(h));
}

void FillNormalLike(uint64_t key, uint64_t first, float mean, float stddev,
                    std::span<float> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = mean + stddev * NormalLike(key, first + i);
  }
}

InitRule InitFor(std::string_view name) {
  constexpr std::string_view kNormSuffix = "norm.weight";
  if (name.size() >= kNormSuffix.size() &&
      name.substr(name.size() - kNormSuffix.size()) == kNormSuffix) {
    return {1.0f, 0.02f};
  }
  return {0.0f, 0.02f};
}

}  // namespace tessera::model
