// Counter, Gauge and Histogram: the value cells behind a metric family.
//
// One cell is one time series (a family plus one set of label values). Cells
// are created by a Family (metrics/registry.h) and live as long as its
// Registry; callers keep the reference and update it on the hot path.
//
// Thread-safety: every method is thread-safe and lock-free (relaxed atomics).
// Updates from many threads are never lost; a concurrent reader sees each
// update either whole or not at all. A Histogram read concurrently with
// Observe may see a bucket count without the matching sum (at most the
// observations still in flight), but its bucket counts and count always
// agree, because the count is the sum of the buckets.
//
// Invariants: a Counter never decreases. A Histogram's upper bounds are
// finite and strictly increasing; the implicit last bucket is +Inf.
#ifndef TESSERA_METRICS_METRIC_H_
#define TESSERA_METRICS_METRIC_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace tessera::metrics {

// A monotonically increasing total, e.g. tokens generated.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds delta (>= 0). A negative or NaN delta is a caller bug: it asserts
  // in debug builds and is ignored in release builds.
  void Inc(double delta = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down, e.g. requests running now.
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Inc(double delta = 1.0) {
    value_.fetch_add(delta, std::memory_order_relaxed);
  }
  void Dec(double delta = 1.0) {
    value_.fetch_sub(delta, std::memory_order_relaxed);
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Counts observations into buckets fixed at creation (Prometheus `le`
// semantics: an observation v lands in the first bucket with v <= bound).
class Histogram {
 public:
  // What a reader sees: cumulative[i] counts observations <= bounds[i];
  // cumulative.back() (the +Inf bucket) equals count.
  struct Snapshot {
    std::vector<uint64_t> cumulative;  // (bounds + 1)
    double sum = 0.0;
    uint64_t count = 0;
  };

  // upper_bounds: finite, strictly increasing (the Registry checks).
  explicit Histogram(std::shared_ptr<const std::vector<double>> upper_bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Records one observation. NaN is a caller bug: it asserts in debug builds
  // and is ignored in release builds (it would poison the sum forever).
  void Observe(double value);
  Snapshot Read() const;
  const std::vector<double>& upper_bounds() const { return *upper_bounds_; }

 private:
  std::shared_ptr<const std::vector<double>> upper_bounds_;
  // Non-cumulative per-bucket counts, (bounds + 1); the last is +Inf.
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

}  // namespace tessera::metrics

#endif  // TESSERA_METRICS_METRIC_H_
