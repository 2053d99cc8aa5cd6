// Read-bandwidth probe: see read_bandwidth.h.
#include "cli/read_bandwidth.h"

#include <sys/mman.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <new>
#include <thread>
#include <vector>

namespace tessera::cli {
namespace {

constexpr uint64_t kAlign = 4096;  // chunks start on page boundaries

// Sums `n` 64-bit words. -O3 vectorises the reduction; the clones let the
// loader pick 512- or 256-bit loads on machines that have them.
__attribute__((target_clones("avx512f", "avx2", "default"), noinline)) uint64_t
SumWords(const uint64_t* __restrict words, uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += words[i];
  return sum;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

StatusOr<ReadBandwidthResult> MeasureReadBandwidth(
    const ReadBandwidthOptions& options) {
  if (options.repetitions < 1) {
    return InvalidArgumentError(fmt::format(
        "bandwidth repetitions {} must be at least 1", options.repetitions));
  }
  if (options.threads < 0) {
    return InvalidArgumentError(
        fmt::format("--cpu-threads {} must be >= 1 (0: all hardware threads)",
                    options.threads));
  }
  int threads = options.threads > 0
                    ? options.threads
                    : int(std::max(1u, std::thread::hardware_concurrency()));
  // Each thread's chunk: a whole number of pages, at least one.
  const uint64_t chunk = options.bytes / uint64_t(threads) / kAlign * kAlign;
  if (chunk == 0) {
    return InvalidArgumentError(fmt::format(
        "--bandwidth-bytes {} is too small for {} threads; give at least {} "
        "(one 4 KiB page per thread), ideally far more than the caches",
        options.bytes, threads, uint64_t(threads) * kAlign));
  }
  const uint64_t total = chunk * uint64_t(threads);
  // 2 MiB aligned and on transparent huge pages where the kernel allows,
  // like the cpu plugin's large buffers (weights), so the probe and the
  // decode it is compared with pay the same page-walk costs.
  constexpr uint64_t kHuge = 2u << 20;
  std::unique_ptr<void, FreeDeleter> buffer(
      std::aligned_alloc(kHuge, (total + kHuge - 1) / kHuge * kHuge));
  if (buffer != nullptr) madvise(buffer.get(), total, MADV_HUGEPAGE);
  if (buffer == nullptr) {
    return ResourceExhaustedError(fmt::format(
        "cannot allocate {} bytes of host memory for the bandwidth probe; "
        "pass a smaller --bandwidth-bytes",
        total));
  }
  auto* base = static_cast<uint64_t*>(buffer.get());
  const uint64_t words = chunk / sizeof(uint64_t);

  // Phases per repetition: start barrier, sum, end barrier (the main thread
  // takes part and times between the two).
  std::barrier sync(threads + 1);
  std::vector<uint64_t> sums(size_t(threads) * 8, 0);  // padded slots
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      uint64_t* mine = base + uint64_t(t) * words;
      // First touch by the reading thread (NUMA-local pages), non-zero data.
      for (uint64_t i = 0; i < words; ++i) mine[i] = i ^ uint64_t(t);
      sync.arrive_and_wait();  // filled
      for (int r = 0; r < options.repetitions; ++r) {
        sync.arrive_and_wait();  // start
        sums[size_t(t) * 8] += SumWords(mine, words);
        sync.arrive_and_wait();  // end
      }
    });
  }
  sync.arrive_and_wait();  // all chunks filled
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < options.repetitions; ++r) {
    sync.arrive_and_wait();
    const auto start = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = std::min(best, seconds);
  }
  for (auto& w : workers) w.join();

  ReadBandwidthResult result;
  result.bytes = total;
  result.threads = threads;
  result.repetitions = options.repetitions;
  result.best_seconds = best;
  result.read_gbps = best > 0 ? double(total) / best / 1e9 : 0.0;
  for (int t = 0; t < threads; ++t) result.checksum += sums[size_t(t) * 8];
  return result;
}

nlohmann::ordered_json ReadBandwidthToJson(const ReadBandwidthResult& result) {
  return {{"read_gbps", result.read_gbps},
          {"bytes", result.bytes},
          {"threads", result.threads},
          {"repetitions", result.repetitions},
          {"scope", "host"}};
}

}  // namespace tessera::cli
