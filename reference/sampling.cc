#include "reference/sampling.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera::reference {

int64_t ArgmaxRow(std::span<const double> values) {
  int64_t best = -1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (best < 0 || values[i] > values[best]) best = static_cast<int64_t>(i);
  }
  return best;
}

int64_t SampleRow(std::span<const double> logits, const SampleRowParams& params,
                  SampleTrace* trace) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  if (vocab == 0) return -1;
  if (params.temperature <= 0) return ArgmaxRow(logits);

  // p = softmax(logits / temperature), with the max subtracted for range.
  double max_logit = logits[ArgmaxRow(logits)];
  std::vector<double> p(vocab);
  double z = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    p[i] = std::exp((logits[i] - max_logit) / params.temperature);
    z += p[i];
  }
  for (double& v : p) v /= z;

  // Order ids by p descending, ties to the lower id.
  std::vector<int64_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return p[a] > p[b]; });

  int64_t keep = vocab;
  if (params.top_k > 0 && params.top_k < vocab) keep = params.top_k;
  if (params.top_p < 1) {
    // The shortest prefix whose mass reaches top_p (at least one id).
    double mass = 0;
    for (int64_t j = 0; j < keep; ++j) {
      mass += p[order[j]];
      if (mass >= params.top_p) {
        keep = j + 1;
        break;
      }
    }
  }
  if (params.min_p > 0) {
    // Drop ids with p < min_p * p_max; the list is sorted, so what stays is
    // a prefix, and the first id always stays.
    double threshold = params.min_p * p[order[0]];
    int64_t j = 1;
    while (j < keep && p[order[j]] >= threshold) ++j;
    keep = j;
  }

  double total = 0;
  for (int64_t j = 0; j < keep; ++j) total += p[order[j]];
  if (trace != nullptr) {
    trace->kept.assign(order.begin(), order.begin() + keep);
    trace->cdf.clear();
    double running = 0;
    for (int64_t j = 0; j < keep; ++j) {
      running += p[order[j]];
      trace->cdf.push_back(running / total);
    }
  }
  const double target = params.uniform * total;
  double cumulative = 0;
  for (int64_t j = 0; j < keep; ++j) {
    cumulative += p[order[j]];
    if (cumulative > target) return order[j];
  }
  return order[keep - 1];  // rounding left none above the target
}

}  // namespace tessera::reference
