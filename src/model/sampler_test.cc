#include "model/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/runner_test_util.h"

namespace tessera::model {
namespace {

class SamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rt = testing::CreateRuntime();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
    auto stream = runtime_->device(0).CreateStream();
    ASSERT_TRUE(stream.ok());
    stream_ = std::move(stream).value();
    sampler_ = std::make_unique<Sampler>(*runtime_, runtime_->device(0),
                                         *stream_);
  }
  void TearDown() override {
    sampler_.reset();
    logits_.reset();
    stream_.reset();
  }
  // Uploads `rows` x `vocab` logits.
  tsr_tensor Upload(const std::vector<float>& values, int64_t rows) {
    auto buffer = runtime_->device(0).Allocate(values.size() * 4);
    EXPECT_TRUE(buffer.ok());
    logits_ = std::move(buffer).value();
    EXPECT_TRUE(logits_->CopyFromHost(0, values.data(), values.size() * 4).ok());
    return logits_->View(TSR_DTYPE_F32,
                         {rows, int64_t(values.size()) / rows});
  }

  std::unique_ptr<runtime::Runtime> runtime_;
  runtime::StreamPtr stream_;
  runtime::BufferPtr logits_;
  std::unique_ptr<Sampler> sampler_;
};

TEST_F(SamplerTest, GreedyIsArgmaxWithTiesToTheLowestId) {
  tsr_tensor logits = Upload({0, 5, 1, 5,  /**/ 9, -1, 3, 2}, 2);
  std::vector<SampleRow> rows(2);
  auto ids = sampler_->Sample(logits, rows);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 0}));
}

TEST_F(SamplerTest, SeededRowsAreReproducibleWhateverTheBatch) {
  std::vector<float> values;
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < 50; ++i) values.push_back(std::sin(float(i * (r + 1))));
  }
  tsr_tensor logits = Upload(values, 3);
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_p = 0.9f;
  auto run = [&](uint64_t seed_row1, bool row0_greedy) {
    SamplerRng r0(1), r1(seed_row1), r2(3);
    std::vector<SampleRow> rows = {{p, &r0}, {p, &r1}, {p, &r2}};
    if (row0_greedy) rows[0] = SampleRow{};
    std::vector<int32_t> out;
    for (int step = 0; step < 20; ++step) {
      auto ids = sampler_->Sample(logits, rows);
      EXPECT_TRUE(ids.ok()) << ids.status().ToString();
      out.push_back((*ids)[1]);
    }
    return out;
  };
  const auto a = run(42, false);
  EXPECT_EQ(a, run(42, false));
  EXPECT_EQ(a, run(42, true));  // the neighbour's mode does not matter
  EXPECT_NE(a, run(43, false));
}

TEST_F(SamplerTest, SamplesFromTheSoftmax) {
  // Two tokens with probabilities 1/4 and 3/4; 4000 independent rows.
  const int64_t n = 4000;
  std::vector<float> values;
  for (int64_t r = 0; r < n; ++r) {
    values.push_back(0.0f);
    values.push_back(std::log(3.0f));
  }
  tsr_tensor logits = Upload(values, n);
  std::vector<SamplerRng> rngs;
  for (int64_t r = 0; r < n; ++r) rngs.emplace_back(1000 + r);
  std::vector<SampleRow> rows(n);
  for (int64_t r = 0; r < n; ++r) {
    rows[r].params.temperature = 1.0f;
    rows[r].rng = &rngs[r];
  }
  auto ids = sampler_->Sample(logits, rows);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  int64_t ones = 0;
  for (int32_t id : *ids) ones += id;
  EXPECT_NEAR(double(ones) / n, 0.75, 0.03);
  // top_k = 1 keeps only the most likely token.
  for (auto& row : rows) row.params.top_k = 1;
  ids = sampler_->Sample(logits, rows);
  ASSERT_TRUE(ids.ok());
  for (int32_t id : *ids) ASSERT_EQ(id, 1);
}

TEST_F(SamplerTest, RejectsMismatchedRows) {
  tsr_tensor logits = Upload({0, 1, 2, 3}, 2);
  std::vector<SampleRow> one(1);
  EXPECT_EQ(sampler_->Sample(logits, one).status().code(),
            StatusCode::kInvalidArgument);
  std::vector<SampleRow> no_rng(2);
  no_rng[1].params.temperature = 0.7f;
  auto s = sampler_->Sample(logits, no_rng);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no generator"), std::string::npos);
}

// With a copy stream, the ids come back on another stream than the one
// that computed them: a kernel that failed on the compute stream must still
// fail the read-back (a wait across streams does not carry the error).
TEST_F(SamplerTest, AFailedComputeStreamFailsTheReadBack) {
  auto copy = runtime_->device(0).CreateStream();
  ASSERT_TRUE(copy.ok());
  Sampler sampler(*runtime_, runtime_->device(0), *stream_, copy->get());
  tsr_tensor logits = Upload({0, 5, 1, 5}, 1);
  std::vector<SampleRow> rows(1);
  // A healthy step first.
  auto ok = sampler.Sample(logits, rows);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  // An embedding lookup of id 7 in a 2-row table fails when it runs: the
  // compute stream's sticky error.
  auto table = runtime_->device(0).Allocate(2 * 4 * 4);
  auto ids = runtime_->device(0).Allocate(4);
  auto out = runtime_->device(0).Allocate(4 * 4);
  ASSERT_TRUE(table.ok() && ids.ok() && out.ok());
  const int32_t bad_id = 7;
  ASSERT_TRUE((*ids)->CopyFromHost(0, &bad_id, 4).ok());
  const tsr_tensor in[] = {(*ids)->View(TSR_DTYPE_I32, {1}),
                           (*table)->View(TSR_DTYPE_F32, {2, 4})};
  const tsr_tensor y[] = {(*out)->View(TSR_DTYPE_F32, {1, 4})};
  ASSERT_TRUE(runtime_->dispatcher().Launch(*stream_, TSR_OP_EMBEDDING, in, y).ok());
  auto failed = sampler.Sample(logits, rows);
  ASSERT_FALSE(failed.ok()) << "the ids of a failed step came back as if valid";
  EXPECT_NE(failed.status().message().find("the step failed on the device"),
            std::string::npos)
      << failed.status().ToString();
  (void)stream_->Synchronize();  // the sticky error, for the teardown
}

TEST(SamplerRngTest, DeterministicUniformsInUnitInterval) {
  SamplerRng a(5), b(5);
  double sum = 0;
  for (int i = 0; i < 10000; ++i) {
    const float u = a.Uniform();
    ASSERT_EQ(u, b.Uniform());
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.02);
}

}  // namespace
}  // namespace tessera::model
