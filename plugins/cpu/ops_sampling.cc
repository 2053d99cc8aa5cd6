// Sampling-side ops, one row of logits (B, V) per request:
//   argmax    logits X (B, V) -> ids I32 (B); ties to the lowest index
//   sample    logits F32 (B, V), temperature, top_k, top_p, min_p, uniform
//             (B each) -> ids I32 (B); the exact algorithm of the header
//   logprobs  logits F32 (B, V), ids I32 (B) -> logprob F32 (B)
//             [, top_ids I32 (B, K), top_logprobs F32 (B, K)]
// Probabilities and log-sum-exp are computed in f64.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ops.h"
#include "ops_common.h"

namespace tessera::cpu {
namespace {

template <typename T>
inline float At2(const TensorView& v, int64_t i, int64_t j) {
  return ToF32(v.as<T>()[i * v.stride(0) + j * v.stride(1)]);
}

template <typename T>
inline T At1(const TensorView& v, int64_t i) {
  return v.as<T>()[i * v.stride(0)];
}

inline void SetI32(const TensorView& v, int64_t i, int32_t value) {
  v.as<int32_t>()[i * v.stride(0)] = value;
}

// Index of the largest value of row b (NaNs ignored; ties to the lowest).
template <typename T>
int64_t ArgmaxRow(const TensorView& logits, int64_t b) {
  int64_t best = -1;
  float best_v = 0.0f;
  for (int64_t i = 0; i < logits.dim(1); ++i) {
    float v = At2<T>(logits, b, i);
    if (std::isnan(v)) continue;
    if (best < 0 || v > best_v) {
      best = i;
      best_v = v;
    }
  }
  return best < 0 ? 0 : best;
}

// Sorts `order` lazily by (p descending, id ascending): the first `sorted`
// entries are final; Ensure(n) extends that prefix.
class LazyOrder {
 public:
  explicit LazyOrder(const std::vector<double>& p) : p_(p), order_(p.size()) {
    std::iota(order_.begin(), order_.end(), 0);
  }
  int64_t operator[](size_t i) {
    Ensure(i + 1);
    return order_[i];
  }
  void Ensure(size_t n) {
    if (n <= sorted_) return;
    size_t target = std::min(order_.size(), std::max(n, std::max<size_t>(2 * sorted_, 64)));
    auto cmp = [this](int64_t a, int64_t b) {
      return p_[a] > p_[b] || (p_[a] == p_[b] && a < b);
    };
    std::partial_sort(order_.begin() + sorted_, order_.begin() + target, order_.end(), cmp);
    sorted_ = target;
  }

 private:
  const std::vector<double>& p_;
  std::vector<int64_t> order_;
  size_t sorted_ = 0;
};

int64_t SampleRow(const TensorView& logits, int64_t b, float temperature, int32_t top_k,
                  float top_p, float min_p, float uniform) {
  const int64_t vocab = logits.dim(1);
  if (!(temperature > 0.0f)) return ArgmaxRow<float>(logits, b);
  std::vector<double> p(vocab);
  double max_z = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < vocab; ++i) {
    p[i] = static_cast<double>(At2<float>(logits, b, i)) / temperature;
    max_z = std::max(max_z, p[i]);
  }
  if (!std::isfinite(max_z)) return ArgmaxRow<float>(logits, b);  // all -inf, or an inf
  double sum = 0.0;
  for (int64_t i = 0; i < vocab; ++i) {
    p[i] = std::exp(p[i] - max_z);
    sum += p[i];
  }
  for (int64_t i = 0; i < vocab; ++i) p[i] /= sum;

  LazyOrder order(p);
  int64_t kept = (top_k <= 0 || top_k >= vocab) ? vocab : top_k;
  if (top_p < 1.0f) {
    double cum = 0.0;
    for (int64_t i = 0; i < kept; ++i) {
      cum += p[order[i]];
      if (cum >= top_p) {
        kept = i + 1;
        break;
      }
    }
  }
  if (min_p > 0.0f) {
    const double threshold = static_cast<double>(min_p) * p[order[0]];
    int64_t n = 1;
    while (n < kept && p[order[n]] >= threshold) ++n;
    kept = n;
  }
  double total = 0.0;
  if (kept == vocab) {
    for (int64_t i = 0; i < vocab; ++i) total += p[i];
  } else {
    for (int64_t i = 0; i < kept; ++i) total += p[order[i]];
  }
  const double target = static_cast<double>(uniform) * total;
  double cum = 0.0;
  for (int64_t i = 0; i < kept; ++i) {
    cum += p[order[i]];
    if (cum > target) return order[i];
  }
  return order[kept - 1];
}

}  // namespace

Status RunArgmax(const OpCall& call, ExecContext& ctx) {
  const TensorView &logits = call.in[0], &ids = call.out[0];
  return DispatchFloat(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    ctx.pool->ParallelFor(logits.dim(0), RowGrain(logits.dim(1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) SetI32(ids, r, static_cast<int32_t>(ArgmaxRow<T>(logits, r)));
    });
    return OkStatus();
  });
}

Status RunSample(const OpCall& call, ExecContext& ctx) {
  const TensorView& logits = call.in[0];
  ctx.pool->ParallelFor(logits.dim(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t id = SampleRow(logits, r, At1<float>(call.in[1], r), At1<int32_t>(call.in[2], r),
                             At1<float>(call.in[3], r), At1<float>(call.in[4], r),
                             At1<float>(call.in[5], r));
      SetI32(call.out[0], r, static_cast<int32_t>(id));
    }
  });
  return OkStatus();
}

Status RunLogprobs(const OpCall& call, ExecContext& ctx) {
  const TensorView &logits = call.in[0], &ids = call.in[1], &out = call.out[0];
  const int64_t rows = logits.dim(0), vocab = logits.dim(1);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t id = At1<int32_t>(ids, r);
    if (id < 0 || id >= vocab) {
      return InvalidArgument("ids[", r, "] = ", id, " is outside the vocabulary [0, ", vocab, ")");
    }
  }
  const bool want_top = call.num_outputs == 3;
  const int64_t top_k = want_top ? call.out[1].dim(1) : 0;
  ctx.pool->ParallelFor(rows, RowGrain(vocab), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> order;
    for (int64_t r = begin; r < end; ++r) {
      double max_v = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < vocab; ++i) max_v = std::max<double>(max_v, At2<float>(logits, r, i));
      double sum = 0.0;
      for (int64_t i = 0; i < vocab; ++i) sum += std::exp(At2<float>(logits, r, i) - max_v);
      const double lse = max_v + std::log(sum);
      const int64_t id = At1<int32_t>(ids, r);
      out.as<float>()[r * out.stride(0)] = static_cast<float>(At2<float>(logits, r, id) - lse);
      if (top_k == 0) continue;
      order.resize(vocab);
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + top_k, order.end(), [&](int64_t a, int64_t b) {
        float va = At2<float>(logits, r, a), vb = At2<float>(logits, r, b);
        return va > vb || (va == vb && a < b);
      });
      const TensorView &top_ids = call.out[1], &top_lp = call.out[2];
      for (int64_t j = 0; j < top_k; ++j) {
        top_ids.as<int32_t>()[r * top_ids.stride(0) + j * top_ids.stride(1)] =
            static_cast<int32_t>(order[j]);
        top_lp.as<float>()[r * top_lp.stride(0) + j * top_lp.stride(1)] =
            static_cast<float>(At2<float>(logits, r, order[j]) - lse);
      }
    }
  });
  return OkStatus();
}

}  // namespace tessera::cpu
