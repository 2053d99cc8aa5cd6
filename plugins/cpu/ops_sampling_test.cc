// argmax, sample and logprobs: ties, the exact top-k / top-p / min-p rule
// on a tiny hand-made distribution, determinism given `uniform`, and a
// seeded sweep against a naive implementation of the header's algorithm.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

using ::testing::HasSubstr;

// The header's sample algorithm, written plainly (full sort, f64).
int NaiveSample(const std::vector<double>& logits, double temperature, int top_k, double top_p,
                double min_p, double uniform) {
  const int v = static_cast<int>(logits.size());
  if (!(temperature > 0)) {
    return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  double m = -INFINITY;
  for (double l : logits) m = std::max(m, l / temperature);
  std::vector<double> p(v);
  double sum = 0;
  for (int i = 0; i < v; ++i) sum += (p[i] = std::exp(logits[i] / temperature - m));
  for (double& x : p) x /= sum;
  std::vector<int> order(v);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
  int kept = (top_k <= 0 || top_k >= v) ? v : top_k;
  if (top_p < 1) {
    double cum = 0;
    for (int i = 0; i < kept; ++i) {
      cum += p[order[i]];
      if (cum >= top_p) {
        kept = i + 1;
        break;
      }
    }
  }
  if (min_p > 0) {
    int n = 1;
    while (n < kept && p[order[n]] >= min_p * p[order[0]]) ++n;
    kept = n;
  }
  double total = 0;
  for (int i = 0; i < kept; ++i) total += p[order[i]];
  double cum = 0;
  for (int i = 0; i < kept; ++i) {
    cum += p[order[i]];
    if (cum > uniform * total) return order[i];
  }
  return order[kept - 1];
}

class SamplingTest : public CpuPluginTest {
 protected:
  void SetUp() override {
    CpuPluginTest::SetUp();
    Init();
  }

  // Samples every row of `logits` (B rows of V) with per-row parameters.
  std::vector<double> Sample(const std::vector<double>& logits, int64_t v,
                             const std::vector<double>& temperature,
                             const std::vector<double>& top_k, const std::vector<double>& top_p,
                             const std::vector<double>& min_p,
                             const std::vector<double>& uniform) {
    const int64_t b = static_cast<int64_t>(temperature.size());
    DeviceTensor l = Make(TSR_DTYPE_F32, {b, v}, logits);
    DeviceTensor t = Make(TSR_DTYPE_F32, {b}, temperature);
    DeviceTensor k = Make(TSR_DTYPE_I32, {b}, top_k);
    DeviceTensor p = Make(TSR_DTYPE_F32, {b}, top_p);
    DeviceTensor m = Make(TSR_DTYPE_F32, {b}, min_p);
    DeviceTensor u = Make(TSR_DTYPE_F32, {b}, uniform);
    DeviceTensor ids = Zeros(TSR_DTYPE_I32, {b});
    EXPECT_EQ(Run(TSR_OP_SAMPLE, {l, t, k, p, m, u}, {ids}), TSR_OK) << api_->last_error();
    return Read(ids);
  }

  // One row of the tiny distribution p = (0.5, 0.2, 0.2, 0.1).
  int SampleTiny(double top_k, double top_p, double min_p, double uniform) {
    std::vector<double> logits = {std::log(0.5), std::log(0.2), std::log(0.2), std::log(0.1)};
    return static_cast<int>(Sample(logits, 4, {1.0}, {top_k}, {top_p}, {min_p}, {uniform})[0]);
  }
};

TEST_F(SamplingTest, ArgmaxTiesGoToTheLowestIndex) {
  for (tsr_dtype dt : {TSR_DTYPE_F32, TSR_DTYPE_BF16}) {
    DeviceTensor logits = Make(dt, {3, 4}, {1, 3, 3, 2, -1, -1, -1, -1, 0, 0, 0, 5});
    DeviceTensor ids = Zeros(TSR_DTYPE_I32, {3});
    ASSERT_EQ(Run(TSR_OP_ARGMAX, {logits}, {ids}), TSR_OK) << api_->last_error();
    ExpectNear(Read(ids), {1, 0, 3}, 0);
  }
}

TEST_F(SamplingTest, TinyDistributionTopKTopPMinP) {
  // Order: 0 (0.5), 1 (0.2), 2 (0.2, tie -> after 1), 3 (0.1).
  EXPECT_EQ(SampleTiny(0, 1, 0, 0.0), 0);
  EXPECT_EQ(SampleTiny(0, 1, 0, 0.45), 0);
  EXPECT_EQ(SampleTiny(0, 1, 0, 0.55), 1);
  EXPECT_EQ(SampleTiny(0, 1, 0, 0.75), 2);
  EXPECT_EQ(SampleTiny(0, 1, 0, 0.95), 3);
  EXPECT_EQ(SampleTiny(0, 1, 0, 1.0), 3);  // rounding leaves none: the last kept
  // top_k = 2 keeps {0, 1}: total 0.7.
  EXPECT_EQ(SampleTiny(2, 1, 0, 0.70), 0);  // 0.5 > 0.49
  EXPECT_EQ(SampleTiny(2, 1, 0, 0.72), 1);  // 0.5 <= 0.504 < 0.7
  EXPECT_EQ(SampleTiny(2, 1, 0, 0.99), 1);
  // top_p = 0.8 keeps {0, 1, 2} (0.9 is the first mass >= 0.8).
  EXPECT_EQ(SampleTiny(0, 0.8, 0, 0.99), 2);
  // top_p = 0.3 keeps {0} only.
  EXPECT_EQ(SampleTiny(0, 0.3, 0, 0.99), 0);
  // min_p = 0.3 drops p < 0.15: {0, 1, 2}; min_p = 0.5 drops p < 0.25: {0}.
  EXPECT_EQ(SampleTiny(0, 1, 0.3, 0.99), 2);
  EXPECT_EQ(SampleTiny(0, 1, 0.5, 0.99), 0);
  // All three: top_k 3 -> {0,1,2}; top_p 0.6 -> {0,1}; min_p 0.35 (p < 0.175
  // dropped) -> {0,1}; total 0.7, target 0.56 -> id 1.
  EXPECT_EQ(SampleTiny(3, 0.6, 0.35, 0.8), 1);
  EXPECT_EQ(SampleTiny(3, 0.6, 0.45, 0.8), 0);  // min_p 0.45 drops id 1 too
}

TEST_F(SamplingTest, TemperatureZeroIsArgmax) {
  std::vector<double> logits = {0.1, 2.0, 2.0, -1};
  EXPECT_EQ(Sample(logits, 4, {0.0}, {0}, {1}, {0}, {0.99})[0], 1);
  EXPECT_EQ(Sample(logits, 4, {-1.0}, {0}, {1}, {0}, {0.0})[0], 1);
}

TEST_F(SamplingTest, DeterministicGivenUniformWhateverTheBatch) {
  std::vector<double> row = {0.3, -1.2, 2.5, 0.7, 1.9, -0.4};
  double alone = Sample(row, 6, {0.8}, {4}, {0.9}, {0.05}, {0.37})[0];
  std::vector<double> batch = {5, 4, 3, 2, 1, 0};
  batch.insert(batch.end(), row.begin(), row.end());
  std::vector<double> ids = Sample(batch, 6, {1.3, 0.8}, {0, 4}, {1, 0.9}, {0, 0.05}, {0.9, 0.37});
  EXPECT_EQ(ids[1], alone);
  EXPECT_EQ(Sample(row, 6, {0.8}, {4}, {0.9}, {0.05}, {0.37})[0], alone);
}

TEST_F(SamplingTest, SeededSweepMatchesNaiveAlgorithm) {
  std::mt19937 rng(1234);
  std::normal_distribution<double> normal(0, 2);
  std::uniform_real_distribution<double> unit(0, 1);
  const int64_t v = 300, b = 24;
  std::vector<double> logits(b * v), temperature, top_k, top_p, min_p, uniform;
  for (double& l : logits) l = static_cast<float>(normal(rng));
  for (int64_t r = 0; r < b; ++r) {
    temperature.push_back(static_cast<float>(r % 6 == 0 ? 0.0 : 0.3 + 2 * unit(rng)));
    top_k.push_back(r % 3 == 0 ? 0 : static_cast<int>(1 + unit(rng) * 400));
    top_p.push_back(static_cast<float>(r % 4 == 0 ? 1.0 : 0.2 + 0.8 * unit(rng)));
    min_p.push_back(static_cast<float>(r % 5 == 0 ? 0.0 : 0.2 * unit(rng)));
    uniform.push_back(static_cast<float>(unit(rng)));
  }
  std::vector<double> ids = Sample(logits, v, temperature, top_k, top_p, min_p, uniform);
  for (int64_t r = 0; r < b; ++r) {
    std::vector<double> row(logits.begin() + r * v, logits.begin() + (r + 1) * v);
    EXPECT_EQ(ids[r], NaiveSample(row, temperature[r], static_cast<int>(top_k[r]), top_p[r],
                                  min_p[r], uniform[r]))
        << "row " << r;
  }
}

TEST_F(SamplingTest, LogprobsWithTopK) {
  std::vector<double> logits = {1, 2, 2, 0, 0, 0, 0, 3};
  DeviceTensor l = Make(TSR_DTYPE_F32, {2, 4}, logits);
  DeviceTensor ids = Make(TSR_DTYPE_I32, {2}, {0, 3});
  DeviceTensor lp = Zeros(TSR_DTYPE_F32, {2});
  DeviceTensor top_ids = Zeros(TSR_DTYPE_I32, {2, 3});
  DeviceTensor top_lp = Zeros(TSR_DTYPE_F32, {2, 3}, {1, 2});  // column-major
  ASSERT_EQ(Run(TSR_OP_LOGPROBS, {l, ids}, {lp, top_ids, top_lp}), TSR_OK) << api_->last_error();
  const double lse0 = std::log(std::exp(1) + 2 * std::exp(2) + 1);
  const double lse1 = std::log(3 + std::exp(3));
  ExpectNear(Read(lp), {1 - lse0, 3 - lse1}, 1e-6);
  ExpectNear(Read(top_ids), {1, 2, 0, 3, 0, 1}, 0);
  ExpectNear(Read(top_lp), {2 - lse0, 2 - lse0, 1 - lse0, 3 - lse1, -lse1, -lse1}, 1e-6);
  // Single-output form and K = 0.
  ASSERT_EQ(Run(TSR_OP_LOGPROBS, {l, ids}, {lp}), TSR_OK) << api_->last_error();
  ExpectNear(Read(lp), {1 - lse0, 3 - lse1}, 1e-6);
  DeviceTensor none_ids = Zeros(TSR_DTYPE_I32, {2, 0});
  DeviceTensor none_lp = Zeros(TSR_DTYPE_F32, {2, 0});
  ASSERT_EQ(Run(TSR_OP_LOGPROBS, {l, ids}, {lp, none_ids, none_lp}), TSR_OK) << api_->last_error();
}

TEST_F(SamplingTest, LogprobsIdOutOfRangeIsStickyError) {
  DeviceTensor l = Make(TSR_DTYPE_F32, {1, 4}, {1, 2, 3, 4});
  DeviceTensor ids = Make(TSR_DTYPE_I32, {1}, {4});
  DeviceTensor lp = Zeros(TSR_DTYPE_F32, {1});
  EXPECT_EQ(Run(TSR_OP_LOGPROBS, {l, ids}, {lp}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("ids[0] = 4"));
}

}  // namespace
}  // namespace tessera::cpu::testing
