// Seeded random numbers whose sequence is fixed by the seed alone: the
// same on every compiler and standard library (std::uniform_int_distribution
// and std::shuffle are not specified bit for bit, so benchmark datasets
// built with them could differ between machines).
//
// SeededRandom wraps std::mt19937_64 (whose output IS specified by the
// standard) and derives integers by rejection sampling, reals from the top
// 53 bits. Not thread-safe: one instance per thread.
#ifndef TESSERA_BENCH_SEEDED_RANDOM_H_
#define TESSERA_BENCH_SEEDED_RANDOM_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace tessera::bench {

class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : engine_(seed) {}

  // Uniform in [lo, hi], both ends included. Requires lo <= hi.
  int64_t UniformInt(int64_t lo, int64_t hi) {
    const uint64_t span = uint64_t(hi) - uint64_t(lo);  // hi - lo, no overflow
    if (span == UINT64_MAX) return int64_t(engine_());
    const uint64_t range = span + 1;
    // Largest multiple of `range` that fits; draws at or above it are
    // redrawn so every value is equally likely.
    const uint64_t limit = UINT64_MAX - (UINT64_MAX % range + 1) % range;
    uint64_t draw = engine_();
    while (draw > limit) draw = engine_();
    return lo + int64_t(draw % range);
  }

  // Uniform in [0, 1).
  double UniformReal() { return double(engine_() >> 11) * 0x1.0p-53; }

  // Exponential with the given rate (> 0): mean 1 / rate.
  double Exponential(double rate) { return -std::log1p(-UniformReal()) / rate; }

  // `count` token ids, each uniform in [0, vocab_size), drawn in order.
  std::vector<int32_t> TokenIds(int64_t count, int64_t vocab_size) {
    std::vector<int32_t> ids(static_cast<size_t>(count));
    for (int32_t& id : ids) id = int32_t(UniformInt(0, vocab_size - 1));
    return ids;
  }

  // Fisher-Yates.
  template <typename T>
  void Shuffle(std::vector<T>& items) {
    for (size_t i = items.size(); i > 1; --i) {
      const size_t j = size_t(UniformInt(0, int64_t(i) - 1));
      std::swap(items[i - 1], items[j]);
    }
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_SEEDED_RANDOM_H_
