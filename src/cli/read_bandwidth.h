// Host memory read-bandwidth probe (`tessera doctor --bandwidth`, and the
// roofline of `tessera bench --one-batch`).
//
// N threads each stream through their own disjoint, first-touched chunk of
// one large host buffer (bytes / N each, far larger than the caches by
// default: 1 GiB in all), summing it as 64-bit words with wide vector loads
// (the kernel is cloned for AVX-512F / AVX2 / baseline and chosen at run
// time). The sums feed a result the caller can see, so the reads cannot be
// elided. The best of `repetitions` timed passes (all threads between two
// barriers) gives read_gbps = bytes / seconds / 1e9.
//
// This measures the HOST machine's memory, which is what the cpu plugin's
// decode is bound by; it says nothing about an accelerator's memory.
//
// Thread-safety: MeasureReadBandwidth is reentrant (it owns its buffers and
// threads), but two concurrent probes disturb each other's figure.
#ifndef TESSERA_CLI_READ_BANDWIDTH_H_
#define TESSERA_CLI_READ_BANDWIDTH_H_

#include <cstdint>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tessera::cli {

struct ReadBandwidthOptions {
  uint64_t bytes = uint64_t{1} << 30;  // total over all threads, >= 4 KiB
  int threads = 0;                     // 0: std::thread::hardware_concurrency
  int repetitions = 5;                 // >= 1; the best pass is reported
};

struct ReadBandwidthResult {
  double read_gbps = 0.0;  // 1e9 bytes per second, best pass
  uint64_t bytes = 0;      // bytes read per pass (all threads)
  int threads = 0;
  int repetitions = 0;
  double best_seconds = 0.0;  // wall time of the best pass
  uint64_t checksum = 0;      // sum of all words (keeps the reads alive)
};

// InvalidArgument for a too-small buffer or bad counts; ResourceExhausted
// when the host cannot allocate `bytes`.
StatusOr<ReadBandwidthResult> MeasureReadBandwidth(
    const ReadBandwidthOptions& options);

// {read_gbps, bytes, threads, repetitions, scope: "host"}.
nlohmann::ordered_json ReadBandwidthToJson(const ReadBandwidthResult& result);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_READ_BANDWIDTH_H_
