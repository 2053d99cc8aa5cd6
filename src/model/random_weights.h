// Seeded random weights for make-model: a counter-based generator, so each
// element is a pure function of (seed, tensor name, element index).
//
// Element i of a tensor is built from SplitMix64(key + (i + 1) * golden),
// key = SplitMix64(seed ^ FNV-1a(name)): the same seed always gives the
// same bytes, whatever the chunking, and tensors are independent streams.
// The 64 random bits become four 16-bit uniforms whose standardised sum
// (Irwin-Hall, n = 4) is a cheap normal-like variate: mean 0, variance 1,
// bounded by +-3.46. About a nanosecond per element.
//
// Initialisation (InitFor): linear and embedding weights ~ N(0, 0.02)-like
// (initializer_range, as Hugging Face's _init_weights); biases the same;
// RMSNorm weights 1 + 0.02 * z, i.e. near 1, so activations stay finite.
//
// Pure functions, thread-safe.
#ifndef TESSERA_MODEL_RANDOM_WEIGHTS_H_
#define TESSERA_MODEL_RANDOM_WEIGHTS_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace tessera::model {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The stream key of tensor `name` under `seed`.
uint64_t TensorStreamKey(uint64_t seed, std::string_view name);

// A normal-like variate (mean 0, variance 1) for element `index`.
inline float NormalLike(uint64_t key, uint64_t index) {
  uint64_t r = SplitMix64(key + (index + 1) * 0x9E3779B97F4A7C15ull);
  uint32_t sum = uint32_t(r & 0xFFFF) + uint32_t((r >> 16) & 0xFFFF) +
                 uint32_t((r >> 32) & 0xFFFF) + uint32_t(r >> 48);
  // Mean 4 * 32767.5; standard deviation sqrt(4 * (65536^2 - 1) / 12).
  constexpr float kMean = 131070.0f;
  constexpr float kInvStd = 1.0f / 37837.22f;
  return (float(sum) - kMean) * kInvStd;
}

// mean + stddev * NormalLike for elements [first, first + out.size()).
void FillNormalLike(uint64_t key, uint64_t first, float mean, float stddev,
                    std::span<float> out);

// How make-model initialises a tensor.
struct InitRule {
  float mean = 0.0f;
  float stddev = 0.02f;
};
// Norm weights (names ending in "norm.weight") get {1, 0.02}; everything
// else {0, 0.02}.
InitRule InitFor(std::string_view tensor_name);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_RANDOM_WEIGHTS_H_
