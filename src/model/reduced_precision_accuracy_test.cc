// Reduced-precision options against the full-precision model: weight-only
// int8 (WeightQuantization::kInt8, linear v2), w8a8 (int8_activations:
// linear v3 / decoder_layer v3) and a BF16/F16 KV cache under
// F32 activations (--kv-cache-dtype), teacher-forced: each golden sequence (prompt + the
// unquantised greedy continuation) is fed in one prefill with a logits row
// per token, and the argmax of every row is compared between the two
// runners. The bar: top-1 agreement >= 98% on stories260k's
// golden continuations. Also checks that int8 weights shrink the weight
// bytes (what bench's MB/step counts) and that the runner launches linear
// v2 natively on the cpu plugin.
//
// DISABLED_AgreementOnModelFromEnv measures the same figure on any
// checkpoint (TESSERA_INT8_MODEL=dir; e.g. make-model's qwen3-0.6b preset):
// greedy continuations of seeded random prompts, then teacher-forced
// agreement. It is a measuring tool (run with
// --gtest_also_run_disabled_tests), not part of the suite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "model/model_runner.h"
#include "model/runner_test_util.h"
#include "testing/fixtures.h"

namespace tessera::model {
namespace {

using testing::ArgmaxRow;
using testing::CreateRuntime;

std::vector<std::vector<int32_t>> LoadGoldenSequences(const std::string& path,
                                                      std::vector<size_t>* prompt_lens) {
  std::vector<std::vector<int32_t>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    std::vector<int32_t> ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    prompt_lens->push_back(ids.size());
    for (int32_t id : j.at("greedy_output_ids").get<std::vector<int32_t>>()) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

class ReducedPrecisionAccuracyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rt = CreateRuntime();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
  }

  std::unique_ptr<ModelRunner> MakeRunner(const Checkpoint& checkpoint,
                                          WeightQuantization q, int64_t group,
                                          int64_t capacity,
                                          std::optional<DType> kv_dtype = std::nullopt,
                                          bool int8_activations = false) {
    ModelRunnerOptions options;
    options.int8_activations = int8_activations;
    options.kv_cache_dtype = kv_dtype;
    options.kv_capacity_tokens = capacity;
    options.max_batch_tokens = capacity;
    options.quantization = q;
    options.int8_group_size = group;
    options.show_progress = false;
    auto runner = ModelRunner::Create(*runtime_, checkpoint, options);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    return runner.ok() ? std::move(runner).value() : nullptr;
  }

  // Argmax of every position's logits for `tokens` fed in one prefill.
  static std::vector<int32_t> TeacherForcedArgmax(ModelRunner& runner,
                                                  const std::vector<int32_t>& tokens) {
    std::vector<int32_t> pages;
    EXPECT_TRUE(runner.kv_pool().EnsureCapacity(pages, tokens.size()).ok());
    Batch batch{{{tokens, 0, pages}}, /*all_logits=*/true};
    auto logits = runner.Forward(batch);
    EXPECT_TRUE(logits.ok()) << logits.status().ToString();
    std::vector<int32_t> ids;
    for (int64_t r = 0; logits.ok() && r < logits->rows; ++r) {
      ids.push_back(ArgmaxRow(logits->Row(r)));
    }
    EXPECT_TRUE(runner.kv_pool().Release(pages).ok());
    return ids;
  }

  // Fraction of positions where `a` and `b` pick the same top-1 token.
  static double Agreement(ModelRunner& a, ModelRunner& b,
                          const std::vector<std::vector<int32_t>>& sequences) {
    int64_t same = 0, total = 0;
    for (const auto& tokens : sequences) {
      const std::vector<int32_t> x = TeacherForcedArgmax(a, tokens);
      const std::vector<int32_t> y = TeacherForcedArgmax(b, tokens);
      EXPECT_EQ(x.size(), y.size());
      for (size_t i = 0; i < x.size() && i < y.size(); ++i) same += x[i] == y[i] ? 1 : 0;
      total += static_cast<int64_t>(x.size());
    }
    return total > 0 ? static_cast<double>(same) / static_cast<double>(total) : 0.0;
  }

  // Opens the checkpoint in `dir` and the golden sequences (prompt + greedy
  // continuation) in `golden`; capacity_ fits the longest, in whole pages.
  void LoadStories(const std::string& dir, const std::string& golden) {
    auto checkpoint = Checkpoint::Open(dir);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
    checkpoint_ = std::move(checkpoint).value();
    std::vector<size_t> prompt_lens;
    sequences_ = LoadGoldenSequences(golden, &prompt_lens);
    ASSERT_FALSE(sequences_.empty());
    capacity_ = 0;
    for (const auto& s : sequences_) capacity_ = std::max<int64_t>(capacity_, s.size());
    capacity_ = (capacity_ + 15) / 16 * 16;
  }

  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::vector<std::vector<int32_t>> sequences_;
  int64_t capacity_ = 0;
};

// 4-bit weights lose more than int8 on a model this small (its 64-wide
// rows are two groups each): the cpu plugin measures 85.4% (see
// docs/BENCHMARKS.md); llama.cpp's Q4_0 on the same model is held against
// it in tests/e2e/gguf_model_test.cc. The bar catches a broken 4-bit path
// (which falls far lower), not the last point.
constexpr double kInt4MinAgreement = 0.83;

TEST_F(ReducedPrecisionAccuracyTest, Stories260kTeacherForcedTopOneAgreement) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  ASSERT_NO_FATAL_FAILURE(LoadStories(dir, golden));

  auto base = MakeRunner(*checkpoint_, WeightQuantization::kNone, 0, capacity_);
  ASSERT_NE(base, nullptr);
  struct Variant {
    const char* name;
    int64_t group;
    bool w8a8;
  };
  for (const Variant& v : {Variant{"group 32", kDefaultInt8GroupSize, false},
                           Variant{"per channel", 0, false},
                           Variant{"w8a8, group 32", kDefaultInt8GroupSize, true},
                           Variant{"w8a8, per channel / per token", 0, true}}) {
    SCOPED_TRACE(v.name);
    const int64_t group = v.group;
    auto int8 = MakeRunner(*checkpoint_, WeightQuantization::kInt8, group, capacity_,
                           std::nullopt, v.w8a8);
    ASSERT_NE(int8, nullptr);
    EXPECT_TRUE(int8->weights().layer(0).qkv.quantized());
    EXPECT_EQ(int8->weights().layer(0).qkv.dtype, TSR_DTYPE_I8);
    EXPECT_FALSE(int8->weights().embed().quantized());
    EXPECT_LT(int8->weights().device_bytes(), base->weights().device_bytes());
    const double agreement = Agreement(*base, *int8, sequences_);
    std::printf("stories260k int8 (%s): top-1 agreement %.4f over %zu sequences\n",
                v.name, agreement, sequences_.size());
    EXPECT_GE(agreement, 0.98);
  }
  // 4-bit (--quantization int4): the layers' weights whose K is a multiple
  // of 32 (q/k/v, o, gate/up: K = 64) packed 4-bit, down (K = 172) and the
  // head int8; linear v4 and v3.
  {
    SCOPED_TRACE("int4");
    auto int4 = MakeRunner(*checkpoint_, WeightQuantization::kInt4, kDefaultInt8GroupSize,
                           capacity_, std::nullopt, true);
    ASSERT_NE(int4, nullptr);
    const LayerWeights& l0 = int4->weights().layer(0);
    EXPECT_TRUE(l0.qkv.packed4);
    EXPECT_EQ(l0.qkv.dtype, TSR_DTYPE_U8);
    EXPECT_EQ(l0.qkv.group_size, kInt4GroupSize);
    EXPECT_TRUE(l0.gate_up.packed4);
    EXPECT_FALSE(l0.down.packed4);
    EXPECT_EQ(l0.down.dtype, TSR_DTYPE_I8);
    EXPECT_EQ(int4->weights().lm_head().dtype, TSR_DTYPE_I8);
    const double agreement = Agreement(*base, *int4, sequences_);
    std::printf("stories260k int4 (w4a8, group 32): top-1 agreement %.4f over %zu sequences\n",
                agreement, sequences_.size());
    EXPECT_GE(agreement, kInt4MinAgreement);
  }
  // linear v2, v3 and v4 ran on the cpu plugin itself (no fallback).
  EXPECT_EQ(runtime_->dispatcher().FallbackCount(TSR_OP_LINEAR), 0u);
}

// A BF16 KV cache under stories260k's F32 activations: half the KV bytes,
// and the same top-1 token almost everywhere. F16 is refused (no in-tree
// plugin lists kv_store / paged_attention in F16).
TEST_F(ReducedPrecisionAccuracyTest, Bf16KvCacheOnStories260k) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "models/stories260k/golden_greedy.jsonl");
  ASSERT_NO_FATAL_FAILURE(LoadStories(dir, golden));

  auto base = MakeRunner(*checkpoint_, WeightQuantization::kNone, 0, capacity_);
  ASSERT_NE(base, nullptr);
  ASSERT_EQ(base->activation_dtype(), TSR_DTYPE_F32);
  EXPECT_EQ(base->kv_cache_dtype(), TSR_DTYPE_F32);
  {
    ModelRunnerOptions options;
    options.kv_cache_dtype = TSR_DTYPE_F16;
    options.show_progress = false;
    auto refused = ModelRunner::Create(*runtime_, *checkpoint_, options);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("use auto, f32 or bf16"), std::string::npos)
        << refused.status().ToString();
  }
  auto half = MakeRunner(*checkpoint_, WeightQuantization::kNone, 0, capacity_, TSR_DTYPE_BF16);
  ASSERT_NE(half, nullptr);
  EXPECT_EQ(half->activation_dtype(), TSR_DTYPE_F32);
  EXPECT_EQ(half->kv_cache_dtype(), TSR_DTYPE_BF16);
  EXPECT_EQ(half->kv_pool().dtype(), TSR_DTYPE_BF16);
  EXPECT_EQ(2 * half->kv_pool().total_bytes(), base->kv_pool().total_bytes());
  const double agreement = Agreement(*base, *half, sequences_);
  std::printf("stories260k bf16 KV cache: top-1 agreement %.4f over %zu sequences\n", agreement,
              sequences_.size());
  EXPECT_GE(agreement, 0.98);
}

TEST_F(ReducedPrecisionAccuracyTest, DISABLED_AgreementOnModelFromEnv) {
  const char* dir = std::getenv("TESSERA_INT8_MODEL");
  if (dir == nullptr) GTEST_SKIP() << "set TESSERA_INT8_MODEL to a checkpoint directory";
  const int prompts = 4, prompt_len = 16, steps = 48;
  auto checkpoint = Checkpoint::Open(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status().ToString();
  const int64_t capacity = 80;
  auto base = MakeRunner(**checkpoint, WeightQuantization::kNone, 0, capacity);
  ASSERT_NE(base, nullptr);
  std::mt19937 rng(0);
  std::uniform_int_distribution<int32_t> token(0, (*checkpoint)->config().vocab_size - 1);
  std::vector<std::vector<int32_t>> sequences;
  for (int p = 0; p < prompts; ++p) {
    std::vector<int32_t> seq(prompt_len);
    for (int32_t& t : seq) t = token(rng);
    std::vector<int32_t> pages;
    ASSERT_TRUE(base->kv_pool().EnsureCapacity(pages, prompt_len + steps).ok());
    auto logits = base->Forward(Batch{{{seq, 0, pages}}});
    ASSERT_TRUE(logits.ok()) << logits.status().ToString();
    for (int s = 0; s < steps; ++s) {
      seq.push_back(ArgmaxRow(logits->Row(0)));
      const std::vector<int32_t> last = {seq.back()};
      logits = base->Forward(Batch{{{last, int64_t(seq.size()) - 1, pages}}});
      ASSERT_TRUE(logits.ok()) << logits.status().ToString();
    }
    ASSERT_TRUE(base->kv_pool().Release(pages).ok());
    sequences.push_back(std::move(seq));
  }
  for (int64_t group : {kDefaultInt8GroupSize, int64_t{0}}) {
    auto int8 = MakeRunner(**checkpoint, WeightQuantization::kInt8, group, capacity);
    ASSERT_NE(int8, nullptr);
    std::printf("%s int8 (%s): top-1 agreement %.4f over %d x %d tokens; weights %.1f MB "
                "(unquantised %.1f MB)\n",
                dir, group == 0 ? "per channel" : "group 32", Agreement(*base, *int8, sequences),
                prompts, prompt_len + steps, int8->weights().device_bytes() / 1e6,
                base->weights().device_bytes() / 1e6);
  }
}

}  // namespace
}  // namespace tessera::model
