// MonotonicNs: nanoseconds on the steady clock (an arbitrary epoch), for
// latencies and ages measured within one process. Thread-safe.
#ifndef TESSERA_BASE_MONOTONIC_CLOCK_H_
#define TESSERA_BASE_MONOTONIC_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace tessera {

inline uint64_t MonotonicNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace tessera

#endif  // TESSERA_BASE_MONOTONIC_CLOCK_H_
