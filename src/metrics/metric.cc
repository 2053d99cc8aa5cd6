#include "metrics/metric.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace tessera::metrics {

void Counter::Inc(double delta) {
  assert(delta >= 0.0 && "Counter::Inc with a negative or NaN delta");
  if (!(delta >= 0.0)) return;  // also false for NaN
  value_.fetch_add(delta, std::memory_order_relaxed);
}

Histogram::Histogram(std::shared_ptr<const std::vector<double>> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      counts_(new std::atomic<uint64_t>[upper_bounds_->size() + 1]) {
  for (size_t i = 0; i <= upper_bounds_->size(); ++i) {
    counts_[i].store(0, std::memory_order_relaxed);
  }
}

void Histogram::Observe(double value) {
  assert(!std::isnan(value) && "Histogram::Observe(NaN)");
  if (std::isnan(value)) return;
  const std::vector<double>& bounds = *upper_bounds_;
  const size_t bucket =
      std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot snapshot;
  snapshot.cumulative.resize(upper_bounds_->size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    snapshot.cumulative[i] = running;
  }
  snapshot.count = running;
  snapshot.sum = sum_.load(std::memory_order_relaxed);
  return snapshot;
}

}  // namespace tessera::metrics
