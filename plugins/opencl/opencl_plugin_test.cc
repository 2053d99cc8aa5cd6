// Unit tests of the OpenCL plugin beyond the conformance kit (which runs in
// CTest as plugin_check_opencl): sampling at a real vocabulary size
// (V = 151,936, where the kit stops at 1,000) against reference/, the
// program-binary cache, and the wording of a sticky kernel error. Skips when
// the machine has no OpenCL device (fails under CI=true, where setup.sh
// installs PoCL).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "reference/sampling.h"
#include "testing/fixtures.h"
#include "testing/plugin_test_util.h"

namespace tessera::opencl {
namespace {

namespace fs = std::filesystem;
using ::tessera::testing::DeviceTensor;

class OpenClPluginTest : public ::tessera::testing::PluginTest {
 protected:
  std::string PluginPath() const override { return TSR_OPENCL_PLUGIN_PATH; }

  void SetUp() override {
    PluginTest::SetUp();
    if (HasFailure()) return;
    if (api_->probe() == 0) {
      if (::tessera::testing::RunningUnderCi()) FAIL() << "no OpenCL device and CI=true";
      GTEST_SKIP() << "no OpenCL platform/device here (install pocl-opencl-icd)";
    }
    cache_dir_ = (fs::temp_directory_path() /
                  ("tessera_opencl_test_cache_" + std::to_string(::getpid())))
                     .string();
  }
  void TearDown() override {
    PluginTest::TearDown();
    std::error_code ec;
    fs::remove_all(cache_dir_, ec);
  }
  void InitOpenCl() {
    ASSERT_EQ(InitWith({{"cache_dir", cache_dir_}}), TSR_OK) << api_->last_error();
    ASSERT_EQ(api_->stream_create(0, &stream_), TSR_OK) << api_->last_error();
  }

  std::string cache_dir_;
};

constexpr int64_t kVocab = 151936;  // Qwen3's

std::vector<double> RandomLogits(int64_t n, uint32_t seed, double scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(n);
  for (double& x : v) x = static_cast<float>(dist(rng));  // what an F32 tensor holds
  return v;
}

TEST_F(OpenClPluginTest, SampleArgmaxAndLogprobsAtQwen3VocabularyMatchTheReference) {
  InitOpenCl();
  struct Row {
    double temperature, top_p, min_p, uniform;
    int32_t top_k;
  };
  const std::vector<Row> rows = {{0.0, 1.0, 0.0, 0.5, 0},    {0.8, 1.0, 0.0, 0.37, 0},
                                 {1.0, 0.9, 0.0, 0.61, 0},   {0.7, 1.0, 0.0, 0.93, 50},
                                 {1.2, 1.0, 0.05, 0.12, 0},  {0.6, 0.95, 0.02, 0.77, 40}};
  const int64_t b = static_cast<int64_t>(rows.size());
  std::vector<double> logits;
  for (int64_t r = 0; r < b; ++r) {
    auto row = RandomLogits(kVocab, 100 + static_cast<uint32_t>(r), 3.0);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  std::vector<double> temperature, top_p, min_p, uniform, top_k;
  for (const Row& r : rows) {
    temperature.push_back(r.temperature);
    top_p.push_back(r.top_p);
    min_p.push_back(r.min_p);
    uniform.push_back(r.uniform);
    top_k.push_back(r.top_k);
  }
  DeviceTensor l = Make(TSR_DTYPE_F32, {b, kVocab}, logits);
  DeviceTensor ids = Zeros(TSR_DTYPE_I32, {b});
  ASSERT_EQ(Run(TSR_OP_SAMPLE,
                {l, Make(TSR_DTYPE_F32, {b}, temperature), Make(TSR_DTYPE_I32, {b}, top_k),
                 Make(TSR_DTYPE_F32, {b}, top_p), Make(TSR_DTYPE_F32, {b}, min_p),
                 Make(TSR_DTYPE_F32, {b}, uniform)},
                {ids}),
            TSR_OK)
      << api_->last_error();
  const std::vector<double> sampled = Read(ids);
  for (int64_t r = 0; r < b; ++r) {
    std::span<const double> row(logits.data() + r * kVocab, kVocab);
    reference::SampleRowParams p;
    p.temperature = rows[r].temperature;
    p.top_k = rows[r].top_k;
    p.top_p = rows[r].top_p;
    p.min_p = rows[r].min_p;
    p.uniform = rows[r].uniform;
    EXPECT_EQ(static_cast<int64_t>(sampled[r]), reference::SampleRow(row, p)) << "row " << r;
  }

  DeviceTensor argmax = Zeros(TSR_DTYPE_I32, {b});
  ASSERT_EQ(Run(TSR_OP_ARGMAX, {l}, {argmax}), TSR_OK) << api_->last_error();
  const std::vector<double> best = Read(argmax);
  std::vector<double> chosen;
  for (int64_t r = 0; r < b; ++r) {
    std::span<const double> row(logits.data() + r * kVocab, kVocab);
    EXPECT_EQ(static_cast<int64_t>(best[r]), reference::ArgmaxRow(row)) << "row " << r;
    chosen.push_back(static_cast<double>((r * 7919) % kVocab));
  }

  const int64_t k = 5;
  DeviceTensor lp = Zeros(TSR_DTYPE_F32, {b});
  DeviceTensor top_ids = Zeros(TSR_DTYPE_I32, {b, k});
  DeviceTensor top_lp = Zeros(TSR_DTYPE_F32, {b, k});
  ASSERT_EQ(Run(TSR_OP_LOGPROBS, {l, Make(TSR_DTYPE_I32, {b}, chosen)}, {lp, top_ids, top_lp}),
            TSR_OK)
      << api_->last_error();
  const auto got_lp = Read(lp), got_top_ids = Read(top_ids), got_top_lp = Read(top_lp);
  for (int64_t r = 0; r < b; ++r) {
    std::span<const double> row(logits.data() + r * kVocab, kVocab);
    double max = row[0];
    for (double v : row) max = std::max(max, v);
    double sum = 0;
    for (double v : row) sum += std::exp(v - max);
    const double log_z = max + std::log(sum);
    EXPECT_NEAR(got_lp[r], row[static_cast<size_t>(chosen[r])] - log_z, 1e-4) << "row " << r;
    EXPECT_EQ(static_cast<int64_t>(got_top_ids[r * k]), reference::ArgmaxRow(row));
    EXPECT_NEAR(got_top_lp[r * k], row[reference::ArgmaxRow(row)] - log_z, 1e-4);
    for (int64_t j = 1; j < k; ++j) EXPECT_LE(got_top_lp[r * k + j], got_top_lp[r * k + j - 1]);
  }
}

TEST_F(OpenClPluginTest, ProgramBinaryIsCachedAndAStaleOneIsRebuilt) {
  InitOpenCl();
  DeviceTensor a = Make(TSR_DTYPE_F32, {4}, {1, 2, 3, 4});
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {4});
  ASSERT_EQ(Run(TSR_OP_ADD, {a, a}, {y}), TSR_OK) << api_->last_error();
  std::vector<fs::path> binaries;
  for (const auto& entry : fs::directory_iterator(cache_dir_)) binaries.push_back(entry.path());
  ASSERT_EQ(binaries.size(), 1u) << "expected one program binary in " << cache_dir_;
  EXPECT_THAT(binaries[0].filename().string(), ::testing::MatchesRegex("program-[0-9a-f]{16}\\.bin"));
  EXPECT_GT(fs::file_size(binaries[0]), 0u);
  PluginTest::TearDown();  // shut the plugin down, keep the cache

  // A corrupt cached binary is rejected by the driver and rebuilt from source.
  { std::ofstream(binaries[0], std::ios::binary | std::ios::trunc) << "not a program"; }
  owned_.clear();
  stream_ = nullptr;
  initialised_ = false;
  PluginTest::SetUp();
  InitOpenCl();
  a = Make(TSR_DTYPE_F32, {4}, {1, 2, 3, 4});
  y = Zeros(TSR_DTYPE_F32, {4});
  ASSERT_EQ(Run(TSR_OP_ADD, {a, a}, {y}), TSR_OK) << api_->last_error();
  EXPECT_EQ(Read(y), (std::vector<double>{2, 4, 6, 8}));
  EXPECT_GT(fs::file_size(binaries[0]), 100u) << "the rebuilt binary replaced the corrupt one";
}

TEST_F(OpenClPluginTest, KernelErrorsAreStickyAndSayWhatWasWrong) {
  InitOpenCl();
  DeviceTensor ids = Make(TSR_DTYPE_I32, {3}, {0, 9, 1});
  DeviceTensor table = Make(TSR_DTYPE_F32, {4, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {3, 2});
  EXPECT_EQ(Run(TSR_OP_EMBEDDING, {ids, table}, {y}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(),
              ::testing::HasSubstr("embedding: ids[1] = 9 is outside the table's rows [0, 4)"));
  // Sticky: the stream keeps failing, later work is skipped.
  EXPECT_EQ(api_->stream_synchronize(stream_), TSR_ERR_INVALID_ARGUMENT);
  DeviceTensor ok_ids = Make(TSR_DTYPE_I32, {1}, {2});
  DeviceTensor out = Zeros(TSR_DTYPE_F32, {1, 2}, {}, -1.0);
  EXPECT_EQ(Run(TSR_OP_EMBEDDING, {ok_ids, table}, {out}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(Read(out), (std::vector<double>{-1, -1}));
}

}  // namespace
}  // namespace tessera::opencl
