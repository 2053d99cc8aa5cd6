// The model runner against the float64 reference forward pass
// (tests/model/reference_forward.h) on make-model checkpoints of every
// architecture: prefill, decode steps reading the paged KV cache, chunked
// prefill, mixed batches, BF16 activations and the paged_attention
// fallback path.
#include "model/model_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "model/reference_forward.h"
#include "model/runner_test_util.h"

namespace tessera::model {
namespace {

using testing::ArgmaxRow;
using testing::CreateRuntime;
using testing::MakeCheckpoint;
using testing::RelativeError;
using testing::ScopedEnvVar;
using testing::ScratchDir;
using ::tessera::testing::ReferenceModel;

struct RunnerCase {
  const char* name;
  Architecture arch;
  DType checkpoint_dtype;
  DType activation_dtype;
  double tolerance;  // max error relative to the largest reference logit
  bool custom = false;  // MakeCustomCheckpoint instead of make-model tiny
};

std::ostream& operator<<(std::ostream& os, const RunnerCase& c) {
  return os << c.name;
}

std::vector<int32_t> PromptIds(int64_t n, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> ids(n);
  uint64_t s = seed * 2654435761u + 1;
  for (auto& id : ids) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    id = static_cast<int32_t>((s >> 33) % vocab);
  }
  return ids;
}

class RunnerVsReferenceTest : public ::testing::TestWithParam<RunnerCase> {
 protected:
  void SetUp() override { Start(); }

  void Start() {
    const RunnerCase& c = GetParam();
    if (checkpoint_ == nullptr) {
      auto ckpt = c.custom ? testing::MakeCustomCheckpoint(
                                 dir_.path().string(), c.arch)
                           : MakeCheckpoint(dir_.path().string(), c.arch,
                                            c.checkpoint_dtype);
      ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
      checkpoint_ = std::move(ckpt).value();
      auto ref = ReferenceModel::Load(*checkpoint_);
      ASSERT_TRUE(ref.ok()) << ref.status().ToString();
      reference_ = std::move(ref).value();
    }
    runner_.reset();
    runtime_.reset();
    auto rt = CreateRuntime();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
    ModelRunnerOptions options;
    options.activation_dtype = c.activation_dtype;
    options.page_size = 4;  // small pages: every sequence crosses several
    options.kv_capacity_tokens = 256;
    options.max_batch_tokens = 8;  // forces workspace growth
    auto runner = ModelRunner::Create(*runtime_, *checkpoint_, options);
    ASSERT_TRUE(runner.ok()) << runner.status().ToString();
    runner_ = std::move(runner).value();
  }

  int64_t vocab() const { return checkpoint_->config().vocab_size; }
  double tolerance() const { return GetParam().tolerance; }

  // Runs `tokens` of one sequence after `cached` tokens, all rows' logits.
  Logits Run(std::vector<int32_t>& pages, int64_t cached,
             const std::vector<int32_t>& tokens, bool all_logits = true) {
    EXPECT_TRUE(runner_->kv_pool()
                    .EnsureCapacity(pages, cached + int64_t(tokens.size()))
                    .ok());
    Batch batch;
    batch.sequences.push_back({tokens, cached, pages});
    batch.all_logits = all_logits;
    auto logits = runner_->Forward(batch);
    EXPECT_TRUE(logits.ok()) << logits.status().ToString();
    return logits.ok() ? std::move(logits).value() : Logits{};
  }

  void ExpectClose(const Logits& got, int64_t row,
                   const std::vector<double>& want, const std::string& what) {
    ASSERT_LT(row, got.rows) << what;
    ASSERT_EQ(got.vocab, static_cast<int64_t>(want.size()));
    const double err = RelativeError(got.Row(row), want);
    EXPECT_LE(err, tolerance()) << what << ": relative error " << err;
    max_error_ = std::max(max_error_, err);
  }

  ScratchDir dir_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<ReferenceModel> reference_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<ModelRunner> runner_;
  double max_error_ = 0.0;
};

TEST_P(RunnerVsReferenceTest, PrefillThenDecodeThroughThePagedCache) {
  const std::vector<int32_t> prompt = PromptIds(10, vocab(), 1);
  ReferenceModel::Cache cache = reference_->NewCache();
  auto want = reference_->Forward(cache, prompt);
  std::vector<int32_t> pages;
  Logits got = Run(pages, 0, prompt);
  ASSERT_EQ(got.rows, 10);
  for (int64_t r = 0; r < 10; ++r) {
    ExpectClose(got, r, want[r], "prefill row " + std::to_string(r));
  }
  int32_t next = ArgmaxRow(got.Row(9));
  for (int step = 0; step < 5; ++step) {
    const std::vector<int32_t> token = {next};
    auto want_step = reference_->Forward(cache, token);
    Logits step_logits = Run(pages, 10 + step, token, /*all_logits=*/false);
    ASSERT_EQ(step_logits.rows, 1);
    ExpectClose(step_logits, 0, want_step[0],
                "decode step " + std::to_string(step));
    next = ArgmaxRow(step_logits.Row(0));
  }
  EXPECT_EQ(pages.size(), 4u);  // 15 positions, pages of 4
  RecordProperty("max_relative_error", std::to_string(max_error_));
  std::printf("%s: max error relative to the logit scale %.3g\n",
              GetParam().name, max_error_);
  EXPECT_TRUE(runner_->kv_pool().CheckIntegrity().ok());
}

TEST_P(RunnerVsReferenceTest, ChunkedPrefillMatchesOneShot) {
  const std::vector<int32_t> prompt = PromptIds(11, vocab(), 2);
  ReferenceModel::Cache cache = reference_->NewCache();
  auto want = reference_->Forward(cache, prompt);
  std::vector<int32_t> pages;
  // Chunks of 6 and 5: the second starts mid-page over a cached prefix.
  const std::vector<int32_t> first(prompt.begin(), prompt.begin() + 6);
  const std::vector<int32_t> second(prompt.begin() + 6, prompt.end());
  Logits a = Run(pages, 0, first);
  Logits b = Run(pages, 6, second);
  for (int64_t r = 0; r < 6; ++r) ExpectClose(a, r, want[r], "chunk 1");
  for (int64_t r = 0; r < 5; ++r) ExpectClose(b, r, want[6 + r], "chunk 2");
}

// A sequence with all_rows brings one logits row per new token (prompt
// logprobs) while the others bring their last: rows in sequence order.
TEST_P(RunnerVsReferenceTest, AllRowsForOneSequenceOfTheBatch) {
  const std::vector<int32_t> pa = PromptIds(5, vocab(), 7);
  const std::vector<int32_t> pb = PromptIds(6, vocab(), 8);
  const std::vector<int32_t> pc = PromptIds(3, vocab(), 9);
  ReferenceModel::Cache ca = reference_->NewCache();
  ReferenceModel::Cache cb = reference_->NewCache();
  ReferenceModel::Cache cc = reference_->NewCache();
  auto wa = reference_->Forward(ca, pa);
  auto wb = reference_->Forward(cb, pb);
  auto wc = reference_->Forward(cc, pc);
  std::vector<int32_t> pages_a, pages_b, pages_c;
  kv::KvPool& pool = runner_->kv_pool();
  ASSERT_TRUE(pool.EnsureCapacity(pages_a, 5).ok());
  ASSERT_TRUE(pool.EnsureCapacity(pages_b, 6).ok());
  ASSERT_TRUE(pool.EnsureCapacity(pages_c, 3).ok());
  Batch batch;
  batch.sequences.push_back({pa, 0, pages_a});
  batch.sequences.push_back({pb, 0, pages_b, /*all_rows=*/true});
  batch.sequences.push_back({pc, 0, pages_c});
  auto got = runner_->Forward(batch);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->rows, 1 + 6 + 1);
  ExpectClose(*got, 0, wa[4], "a last");
  for (int64_t r = 0; r < 6; ++r) {
    ExpectClose(*got, 1 + r, wb[r], "b row " + std::to_string(r));
  }
  ExpectClose(*got, 7, wc[2], "c last");
}

// An embedding runner (no lm_head) returns the final hidden states: every
// token's, or each sequence's last, in a batch of a fresh prompt and a chunk
// over a cached prefix.
TEST_P(RunnerVsReferenceTest, EmbeddingRunnerReturnsTheFinalHiddenStates) {
  ModelRunnerOptions options;
  options.activation_dtype = GetParam().activation_dtype;
  options.page_size = 4;
  options.kv_capacity_tokens = 256;
  options.max_batch_tokens = 8;
  options.embedding_only = true;
  runner_.reset();
  auto runner = ModelRunner::Create(*runtime_, *checkpoint_, options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  runner_ = std::move(runner).value();

  const std::vector<int32_t> pa = PromptIds(7, vocab(), 5);
  const std::vector<int32_t> pb = PromptIds(9, vocab(), 6);
  ReferenceModel::Cache ca = reference_->NewCache();
  ReferenceModel::Cache cb = reference_->NewCache();
  auto want_a = reference_->ForwardHidden(ca, pa);
  auto want_b = reference_->ForwardHidden(cb, pb);
  std::vector<int32_t> pages_a, pages_b;
  kv::KvPool& pool = runner_->kv_pool();
  ASSERT_TRUE(pool.EnsureCapacity(pages_a, 7).ok());
  ASSERT_TRUE(pool.EnsureCapacity(pages_b, 9).ok());
  const int64_t h = checkpoint_->config().hidden_size;
  auto check = [&](const HiddenStates& got, int64_t row,
                   const std::vector<double>& want, const std::string& what) {
    ASSERT_EQ(got.hidden, h);
    ASSERT_LT(row, got.rows);
    const double err = RelativeError(got.Rows(row, row + 1), want);
    EXPECT_LE(err, tolerance()) << what << ": relative error " << err;
  };
  {
    // b's first 5 tokens alone first: the batch below brings its last 4
    // over that cached prefix.
    Batch prefix;
    prefix.sequences.push_back(
        {std::span<const int32_t>(pb).first(5), 0, pages_b});
    prefix.all_logits = true;
    auto got = runner_->ForwardHidden(prefix);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ(got->rows, 5);
    for (int64_t r = 0; r < 5; ++r) check(*got, r, want_b[r], "prefix");
  }
  Batch batch;
  batch.sequences.push_back({pa, 0, pages_a});
  batch.sequences.push_back({std::span<const int32_t>(pb).subspan(5), 5, pages_b});
  batch.all_logits = true;
  auto all = runner_->ForwardHidden(batch);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->rows, 11);
  for (int64_t r = 0; r < 7; ++r) check(*all, r, want_a[r], "a");
  for (int64_t r = 0; r < 4; ++r) check(*all, 7 + r, want_b[5 + r], "b");
  // Last rows only (recomputing the same positions writes the same K/V).
  batch.all_logits = false;
  auto last = runner_->ForwardHidden(batch);
  ASSERT_TRUE(last.ok()) << last.status().ToString();
  ASSERT_EQ(last->rows, 2);
  check(*last, 0, want_a[6], "a last");
  check(*last, 1, want_b[8], "b last");
  // No output head: logits are refused with the reason.
  auto logits = runner_->Forward(batch);
  ASSERT_FALSE(logits.ok());
  EXPECT_NE(logits.status().message().find("--is-embedding"), std::string::npos);
}

// Prefill, chunked prefill over a cached prefix and decode in one call.
TEST_P(RunnerVsReferenceTest, MixedBatchMatchesSequencesAlone) {
  const std::vector<int32_t> pa = PromptIds(7, vocab(), 3);
  const std::vector<int32_t> pb = PromptIds(9, vocab(), 4);
  const std::vector<int32_t> pc = PromptIds(8, vocab(), 5);
  ReferenceModel::Cache ca = reference_->NewCache();
  ReferenceModel::Cache cb = reference_->NewCache();
  ReferenceModel::Cache cc = reference_->NewCache();
  auto want_a = reference_->Forward(ca, pa);
  auto want_b = reference_->Forward(cb, pb);
  auto want_c = reference_->Forward(cc, pc);

  // Step 1: b's prompt and the first 3 tokens of c.
  std::vector<int32_t> pages_a, pages_b, pages_c;
  kv::KvPool& pool = runner_->kv_pool();
  ASSERT_TRUE(pool.EnsureCapacity(pages_b, 9).ok());
  ASSERT_TRUE(pool.EnsureCapacity(pages_c, 3).ok());
  const std::vector<int32_t> c_head(pc.begin(), pc.begin() + 3);
  Batch first;
  first.sequences = {{pb, 0, pages_b}, {c_head, 0, pages_c}};
  auto l1 = runner_->Forward(first);
  ASSERT_TRUE(l1.ok()) << l1.status().ToString();
  ASSERT_EQ(l1->rows, 2);
  ExpectClose(*l1, 0, want_b[8], "b prompt");
  ExpectClose(*l1, 1, want_c[2], "c head");

  // Step 2: a's prompt (fresh), b decodes one token, c's remaining 5.
  const int32_t b_next = ArgmaxRow(l1->Row(0));
  auto want_b_next = reference_->Forward(cb, std::vector<int32_t>{b_next});
  ASSERT_TRUE(pool.EnsureCapacity(pages_a, 7).ok());
  ASSERT_TRUE(pool.EnsureCapacity(pages_b, 10).ok());
  ASSERT_TRUE(pool.EnsureCapacity(pages_c, 8).ok());
  const std::vector<int32_t> c_tail(pc.begin() + 3, pc.end());
  const std::vector<int32_t> b_tok = {b_next};
  Batch second;
  second.sequences = {{pa, 0, pages_a}, {b_tok, 9, pages_b},
                      {c_tail, 3, pages_c}};
  second.all_logits = true;
  auto l2 = runner_->Forward(second);
  ASSERT_TRUE(l2.ok()) << l2.status().ToString();
  ASSERT_EQ(l2->rows, 7 + 1 + 5);
  for (int64_t r = 0; r < 7; ++r) ExpectClose(*l2, r, want_a[r], "a prompt");
  ExpectClose(*l2, 7, want_b_next[0], "b decode");
  for (int64_t r = 0; r < 5; ++r) {
    ExpectClose(*l2, 8 + r, want_c[3 + r], "c tail");
  }
}

// TESSERA_DISABLE_OPS=paged_attention sends attention down the dispatcher's
// fallback path; the logits must not change.
TEST_P(RunnerVsReferenceTest, PagedAttentionFallbackGivesTheSameLogits) {
  const std::vector<int32_t> prompt = PromptIds(9, vocab(), 6);
  std::vector<int32_t> pages;
  Logits native = Run(pages, 0, prompt);
  ASSERT_EQ(native.rows, 9);
  {
    ScopedEnvVar disable("TESSERA_DISABLE_OPS", "paged_attention");
    Start();
  }
  ASSERT_EQ(runtime_->dispatcher().Coverage(TSR_OP_PAGED_ATTENTION),
            runtime::OpRoute::kFallback);
  std::vector<int32_t> pages2;
  Logits fallback = Run(pages2, 0, prompt);
  ASSERT_EQ(fallback.rows, 9);
  EXPECT_GT(runtime_->dispatcher().FallbackCount(TSR_OP_PAGED_ATTENTION), 0u);
  ReferenceModel::Cache cache = reference_->NewCache();
  auto want = reference_->Forward(cache, prompt);
  for (int64_t r = 0; r < 9; ++r) {
    ExpectClose(fallback, r, want[r], "fallback row");
    if (runtime_->cpu_is_selected()) {
      // Same kernels on the same device: bit-identical.
      for (int64_t i = 0; i < native.vocab; ++i) {
        ASSERT_EQ(native.Row(r)[i], fallback.Row(r)[i]) << r << "," << i;
      }
    }
  }
}

// The cpu plugin offers the fused decoder_layer: every layer is one launch.
// TESSERA_DISABLE_OPS=decoder_layer brings back the v1 op sequence; the
// fused op is that same sequence, so the logits agree (bit for bit in F32,
// where rounding each intermediate to X changes nothing between the two).
TEST_P(RunnerVsReferenceTest, FusedLayersMatchTheOpSequence) {
  const std::vector<int32_t> prompt = PromptIds(9, vocab(), 8);
  std::vector<int32_t> pages;
  Logits fused = Run(pages, 0, prompt);
  Logits fused_step = Run(pages, 9, {3}, /*all_logits=*/false);
  if (runtime_->cpu_is_selected()) {
    EXPECT_TRUE(runner_->uses_fused_layers());
    uint64_t launches = 0;
    for (const auto& c : runtime_->dispatcher().Counters()) {
      if (c.op == "decoder_layer") launches += c.launches;
    }
    EXPECT_EQ(launches,
              2u * static_cast<uint64_t>(
                       checkpoint_->config().num_hidden_layers));
  }
  {
    ScopedEnvVar disable("TESSERA_DISABLE_OPS", "decoder_layer");
    Start();
  }
  EXPECT_FALSE(runner_->uses_fused_layers());
  std::vector<int32_t> pages2;
  Logits unfused = Run(pages2, 0, prompt);
  Logits unfused_step = Run(pages2, 9, {3}, /*all_logits=*/false);
  ASSERT_EQ(fused.rows, unfused.rows);
  ReferenceModel::Cache cache = reference_->NewCache();
  auto want = reference_->Forward(cache, prompt);
  for (int64_t r = 0; r < 9; ++r) {
    ExpectClose(fused, r, want[r], "fused row");
    ExpectClose(unfused, r, want[r], "unfused row");
    const double gap = RelativeError(fused.Row(r), std::vector<double>(
        unfused.Row(r).begin(), unfused.Row(r).end()));
    EXPECT_LE(gap, GetParam().activation_dtype == TSR_DTYPE_F32 ? 0.0 : tolerance())
        << "row " << r;
  }
  const double step_gap = RelativeError(
      fused_step.Row(0), std::vector<double>(unfused_step.Row(0).begin(),
                                             unfused_step.Row(0).end()));
  EXPECT_LE(step_gap,
            GetParam().activation_dtype == TSR_DTYPE_F32 ? 0.0 : tolerance());
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, RunnerVsReferenceTest,
    ::testing::Values(
        RunnerCase{"qwen3_f32", Architecture::kQwen3, TSR_DTYPE_F32,
                   TSR_DTYPE_F32, 1e-4},
        RunnerCase{"qwen2_f32", Architecture::kQwen2, TSR_DTYPE_F32,
                   TSR_DTYPE_F32, 1e-4},
        RunnerCase{"llama_f32", Architecture::kLlama, TSR_DTYPE_F32,
                   TSR_DTYPE_F32, 1e-4},
        // BF16 weights are exact in F32: as tight as F32.
        RunnerCase{"qwen2_bf16_weights_f32", Architecture::kQwen2,
                   TSR_DTYPE_BF16, TSR_DTYPE_F32, 1e-4},
        // BF16 activations and KV: rounding at every step.
        RunnerCase{"qwen3_bf16", Architecture::kQwen3, TSR_DTYPE_BF16,
                   TSR_DTYPE_BF16, 3e-2},
        RunnerCase{"llama_bf16", Architecture::kLlama, TSR_DTYPE_BF16,
                   TSR_DTYPE_BF16, 3e-2},
        // Tied, Hq * D != H, GQA 4:1, biases (o too), llama3 rope scaling.
        RunnerCase{"llama_custom", Architecture::kLlama, TSR_DTYPE_F32,
                   TSR_DTYPE_F32, 1e-4, true},
        RunnerCase{"qwen3_custom", Architecture::kQwen3, TSR_DTYPE_F32,
                   TSR_DTYPE_F32, 1e-4, true},
        RunnerCase{"qwen2_custom", Architecture::kQwen2, TSR_DTYPE_F32,
                   TSR_DTYPE_F32, 1e-4, true},
        // Sharper attention amplifies BF16 rounding (~3% seen); structural
        // mistakes show up as 10-70% (e.g. the wrong rope pairing).
        RunnerCase{"qwen2_custom_bf16", Architecture::kQwen2, TSR_DTYPE_F32,
                   TSR_DTYPE_BF16, 6e-2, true}),
    [](const ::testing::TestParamInfo<RunnerCase>& info) {
      return std::string(info.param.name);
    });

// ---------------------------------------------------------------------------
// Create options, batch validation and weight layout.

class ModelRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto rt = CreateRuntime();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
  }
  std::unique_ptr<Checkpoint> Make(Architecture arch, DType dtype) {
    auto ckpt = MakeCheckpoint(dir_.path().string(), arch, dtype);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status().ToString();
    return ckpt.ok() ? std::move(ckpt).value() : nullptr;
  }

  ScratchDir dir_;
  std::unique_ptr<runtime::Runtime> runtime_;
};

TEST_F(ModelRunnerTest, ActivationDtypeDefaultsFollowTheCheckpoint) {
  auto f32 = Make(Architecture::kLlama, TSR_DTYPE_F32);
  ASSERT_NE(f32, nullptr);
  auto r1 = ModelRunner::Create(*runtime_, *f32);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_EQ((*r1)->activation_dtype(), TSR_DTYPE_F32);
  EXPECT_EQ((*r1)->kv_pool().dtype(), TSR_DTYPE_F32);
  EXPECT_EQ((*r1)->architecture().class_name, "LlamaForCausalLM");
  r1->reset();

  auto bf16 = Make(Architecture::kQwen3, TSR_DTYPE_BF16);
  ASSERT_NE(bf16, nullptr);
  auto r2 = ModelRunner::Create(*runtime_, *bf16);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ((*r2)->activation_dtype(), TSR_DTYPE_BF16);
  EXPECT_EQ((*r2)->kv_pool().dtype(), TSR_DTYPE_BF16);
  EXPECT_TRUE((*r2)->weights().layer(0).q_norm.present());
}

// --mem-fraction-static: the pool is the fraction of memory_total less
// what the device holds after the weights load, measured, not guessed.
TEST_F(ModelRunnerTest, KvMemoryFractionLeavesRoomForWhatTheDeviceHolds) {
  auto ckpt = Make(Architecture::kLlama, TSR_DTYPE_F32);
  ASSERT_NE(ckpt, nullptr);
  runtime::Device& device = runtime_->device(0);
  const double total = double(device.properties().memory_total);
  const ModelConfig& c = ckpt->config();
  const uint64_t per_token =
      2ull * c.num_hidden_layers * c.num_key_value_heads * c.head_dim * 4;
  // A fraction worth 64 MiB of this device: the pool is below that by at
  // least the weights, which the device holds by then.
  ModelRunnerOptions options;
  options.kv_memory_fraction = (64.0 * 1048576) / total;
  auto runner = ModelRunner::Create(*runtime_, *ckpt, options);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  auto used = device.plugin().MemoryFigures(0);
  ASSERT_TRUE(used.ok());
  const uint64_t pool_bytes =
      static_cast<uint64_t>((*runner)->kv_pool().num_pages()) *
      (*runner)->kv_pool().page_size() * per_token;
  EXPECT_GT(pool_bytes, 0u);
  EXPECT_LE(pool_bytes, 64ull << 20);
  // Fraction x total = pool + what else the device holds (one page of
  // rounding and the scratch page aside).
  EXPECT_GE(double(used->in_use_bytes) + 1, 64.0 * 1048576 -
                                               2.0 * (*runner)->kv_pool().page_size() * per_token);
  runner->reset();

  // A fraction smaller than the weights: refused, naming both sizes.
  options.kv_memory_fraction = 1024.0 / total;
  auto none = ModelRunner::Create(*runtime_, *ckpt, options);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(none.status().message().find("leaves no room for the KV cache"),
            std::string::npos)
      << none.status().ToString();
}

TEST_F(ModelRunnerTest, FusesQkvAndGateUpInCheckpointOrder) {
  auto ckpt = Make(Architecture::kQwen2, TSR_DTYPE_F32);
  ASSERT_NE(ckpt, nullptr);
  auto runner = ModelRunner::Create(*runtime_, *ckpt);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  const ModelConfig& c = ckpt->config();
  const LayerWeights& lw = (*runner)->weights().layer(1);
  const int64_t qkv_rows =
      (c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim;
  ASSERT_EQ(lw.qkv.shape, (std::vector<int64_t>{qkv_rows, c.hidden_size}));
  ASSERT_EQ(lw.gate_up.shape,
            (std::vector<int64_t>{2 * c.intermediate_size, c.hidden_size}));
  ASSERT_TRUE(lw.qkv_bias.present());
  EXPECT_FALSE(lw.o_bias.present());  // Qwen2: never on o_proj

  auto expect_stacked = [&](const DeviceWeight& w,
                            std::vector<std::string> parts) {
    std::vector<float> got(NumElements(w.shape));
    ASSERT_TRUE(w.buffer->CopyToHost(got.data(), 0, got.size() * 4).ok());
    size_t at = 0;
    for (const std::string& name : parts) {
      auto t = ckpt->Get(LayerTensorName(1, name));
      ASSERT_TRUE(t.ok());
      std::vector<float> want(t->num_elements());
      std::memcpy(want.data(), t->data(), t->size_bytes());
      for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[at + i], want[i]) << name << " element " << i;
      }
      at += want.size();
    }
    EXPECT_EQ(at, got.size());
  };
  expect_stacked(lw.qkv, {"self_attn.q_proj.weight", "self_attn.k_proj.weight",
                          "self_attn.v_proj.weight"});
  expect_stacked(lw.qkv_bias, {"self_attn.q_proj.bias", "self_attn.k_proj.bias",
                               "self_attn.v_proj.bias"});
  expect_stacked(lw.gate_up, {"mlp.gate_proj.weight", "mlp.up_proj.weight"});
}

// Decode steps replayed from a captured graph (padded to their batch
// bucket, the padding rows writing the pool's scratch page) give the eager
// path's logits exactly, for several buckets and block-table widths, and
// leave every real page as the eager path leaves it.
TEST_F(ModelRunnerTest, GraphReplayGivesTheEagerLogits) {
  auto ckpt = Make(Architecture::kLlama, TSR_DTYPE_F32);
  ASSERT_NE(ckpt, nullptr);
  struct Run {
    std::vector<Logits> steps;
    int64_t replays = 0;
    int64_t captured = 0;
    int64_t captured_at_start = 0;
  };
  auto run = [&](int64_t graph_max_batch, int64_t capture_context = 0) {
    Run out;
    ModelRunnerOptions options;
    options.page_size = 4;
    options.kv_capacity_tokens = 256;
    options.show_progress = false;
    options.graph_max_batch = graph_max_batch;
    options.graph_capture_context = capture_context;
    auto runner = ModelRunner::Create(*runtime_, *ckpt, options);
    EXPECT_TRUE(runner.ok()) << runner.status().ToString();
    if (!runner.ok()) return out;
    ModelRunner& r = **runner;
    out.captured_at_start = r.graphs_captured();
    const int64_t vocab = r.config().vocab_size;
    std::vector<std::vector<int32_t>> prompts = {
        {1, 2, 3, 4, 5}, {7, 8, 9}, {11, 12, 13, 14, 15, 16, 17, 18, 19}};
    std::vector<std::vector<int32_t>> pages(prompts.size());
    std::vector<int64_t> lens;
    Batch prefill;
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_TRUE(r.kv_pool().EnsureCapacity(pages[i], 40).ok());
      prefill.sequences.push_back({prompts[i], 0, pages[i]});
      lens.push_back(static_cast<int64_t>(prompts[i].size()));
    }
    auto first = r.Forward(prefill);
    EXPECT_TRUE(first.ok()) << first.status().ToString();
    std::vector<int32_t> next(prompts.size());
    for (size_t i = 0; i < next.size(); ++i) {
      next[i] = static_cast<int32_t>((i * 31 + 5) % vocab);
    }
    // 6 steps of 3 sequences (bucket 4), then 3 steps of the first alone
    // (bucket 1); the block tables grow past a power of two on the way.
    for (int step = 0; step < 9; ++step) {
      const size_t n = step < 6 ? prompts.size() : 1;
      Batch decode;
      for (size_t i = 0; i < n; ++i) {
        decode.sequences.push_back(
            {std::span<const int32_t>(&next[i], 1), lens[i], pages[i]});
      }
      auto logits = r.Forward(decode);
      EXPECT_TRUE(logits.ok()) << logits.status().ToString();
      if (!logits.ok()) return out;
      for (size_t i = 0; i < n; ++i) {
        ++lens[i];
        next[i] = ArgmaxRow(logits->Row(static_cast<int64_t>(i)));
      }
      out.steps.push_back(std::move(*logits));
    }
    out.replays = r.graph_replays();
    out.captured = r.graphs_captured();
    for (auto& p : pages) EXPECT_TRUE(r.kv_pool().Release(p).ok());
    return out;
  };
  const Run eager = run(0);
  const Run graphs = run(160);
  // Every graph captured in Create, for block tables up to 40 tokens
  // (10 pages: widths 1, 2, 4, 8, 16) and buckets 1, 2, 4, 8: no step
  // captures, and the workspace sized for the largest keeps them all.
  const Run at_start = run(8, 40);
  ASSERT_EQ(eager.steps.size(), graphs.steps.size());
  ASSERT_EQ(eager.steps.size(), at_start.steps.size());
  for (size_t s = 0; s < eager.steps.size(); ++s) {
    EXPECT_EQ(eager.steps[s].data, graphs.steps[s].data) << "step " << s;
    EXPECT_EQ(eager.steps[s].data, at_start.steps[s].data) << "step " << s;
  }
  EXPECT_EQ(eager.replays, 0);
  if (runtime_->plugin().HasGraphs()) {
    EXPECT_EQ(graphs.replays, 9);
    EXPECT_EQ(graphs.captured_at_start, 0);
    EXPECT_GE(graphs.captured, 2);  // buckets 4 and 1
    EXPECT_LT(graphs.captured, 9);  // replays reuse captures
    EXPECT_EQ(at_start.captured_at_start, 4 * 5);
    EXPECT_EQ(at_start.captured, 4 * 5);
    EXPECT_EQ(at_start.replays, 9);
  }
}

TEST_F(ModelRunnerTest, RejectsBatchesItCannotRun) {
  auto ckpt = Make(Architecture::kLlama, TSR_DTYPE_F32);
  ASSERT_NE(ckpt, nullptr);
  ModelRunnerOptions options;
  options.page_size = 4;
  options.kv_capacity_tokens = 16;
  auto runner = ModelRunner::Create(*runtime_, *ckpt, options);
  ASSERT_TRUE(runner.ok());
  ModelRunner& r = **runner;
  std::vector<int32_t> pages;
  ASSERT_TRUE(r.kv_pool().EnsureCapacity(pages, 4).ok());
  const std::vector<int32_t> five = {1, 2, 3, 4, 5};
  const std::vector<int32_t> empty;
  const std::vector<int32_t> bad = {1, 1024};

  auto expect = [&](Batch batch, const std::string& needle) {
    auto out = r.Forward(batch);
    ASSERT_FALSE(out.ok()) << needle;
    EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(out.status().message().find(needle), std::string::npos)
        << out.status().message();
  };
  expect(Batch{}, "at least one sequence");
  expect(Batch{{{five, 0, pages}}}, "EnsureCapacity");
  expect(Batch{{{empty, 0, pages}}}, "no new tokens");
  expect(Batch{{{bad, 0, pages}}}, "outside the vocabulary");
  const std::vector<int32_t> foreign = {3};  // never allocated
  expect(Batch{{{std::vector<int32_t>{1}, 0, foreign}}}, "not an allocated");

  // Asking for more pages than the pool has is the pool's clear error.
  std::vector<int32_t> big;
  Status s = r.kv_pool().EnsureCapacity(big, 100);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("asked for 25 pages, 3 of 4 pages are free"),
            std::string::npos)
      << s.message();
  // A valid batch still runs after the rejected ones.
  const std::vector<int32_t> two = {1, 2};
  auto ok = r.Forward(Batch{{{two, 0, pages}}});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->rows, 1);
}

TEST(ArchRegistryTest, DescribesEachArchitecture) {
  EXPECT_EQ(RegisteredArchitectures().size(), 3u);
  auto llama = FindArchitecture(Architecture::kLlama);
  auto qwen2 = FindArchitecture(Architecture::kQwen2);
  auto qwen3 = FindArchitecture(Architecture::kQwen3);
  ASSERT_TRUE(llama.ok() && qwen2.ok() && qwen3.ok());
  ModelConfig biased;
  biased.attention_bias = true;
  EXPECT_TRUE((*llama)->HasOBias(biased));
  EXPECT_FALSE((*qwen2)->HasOBias(biased));
  EXPECT_TRUE((*qwen2)->HasQkvBias(biased));
  EXPECT_FALSE((*qwen2)->HasQkvBias(ModelConfig{}));
  EXPECT_TRUE((*qwen3)->qk_norm);
  EXPECT_FALSE((*llama)->qk_norm);
  for (auto* spec : RegisteredArchitectures()) {
    EXPECT_EQ(spec->class_name, ArchitectureClassName(spec->id));
  }
}

TEST(WeightsTest, ConvertsBetweenFloatDtypes) {
  const float values[] = {1.0f, -2.5f, 3.14159f, 65504.0f};
  std::vector<uint16_t> bf16(4), f16(4);
  std::vector<float> back(4);
  ConvertFloatElements(reinterpret_cast<const std::byte*>(values),
                       TSR_DTYPE_F32, bf16.data(), TSR_DTYPE_BF16, 4);
  ConvertFloatElements(reinterpret_cast<const std::byte*>(values),
                       TSR_DTYPE_F32, f16.data(), TSR_DTYPE_F16, 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(bf16[i], FloatToBf16(values[i]));
    EXPECT_EQ(f16[i], FloatToF16(values[i]));
  }
  ConvertFloatElements(reinterpret_cast<const std::byte*>(bf16.data()),
                       TSR_DTYPE_BF16, back.data(), TSR_DTYPE_F32, 4);
  EXPECT_EQ(back[1], -2.5f);
  EXPECT_NEAR(back[2], 3.14159f, 0.02f);
}

// F32 to BF16 (vector path and scalar tail) rounds as FloatToBf16 does:
// ties to even, carries into the exponent, infinities, NaNs kept NaN,
// subnormals; an odd count and an unaligned source.
TEST(WeightsTest, NarrowsF32ToBf16AsFloatToBf16) {
  std::vector<uint32_t> bits = {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7f7fffffu,
                                0x7f800000u, 0xff800000u, 0x7fc00001u, 0xffa00000u,
                                0x00000001u, 0x807fffffu, 0x00008000u, 0x0u, 0x80000000u};
  uint32_t x = 12345;
  while (bits.size() < 4099) {
    x = x * 1664525u + 1013904223u;
    bits.push_back(x);
  }
  const int64_t count = int64_t(bits.size());
  std::vector<std::byte> bytes(static_cast<size_t>(count) * 4 + 2);
  std::memcpy(bytes.data() + 2, bits.data(), size_t(count) * 4);
  std::vector<uint16_t> bf16(static_cast<size_t>(count));
  ConvertFloatElements(bytes.data() + 2, TSR_DTYPE_F32, bf16.data(), TSR_DTYPE_BF16, count);
  for (int64_t i = 0; i < count; ++i) {
    float f;
    std::memcpy(&f, &bits[i], sizeof(f));
    EXPECT_EQ(bf16[i], FloatToBf16(f)) << std::hex << bits[i];
  }
}

// F16 to F32 and BF16 (the vector path where the CPU has F16C, scalar
// elsewhere and for tails) gives what F16ToFloat and FloatToBf16 give for
// every one of the 65536 F16 values (NaNs: a NaN), from an odd address.
TEST(WeightsTest, WidensEveryF16Value) {
  constexpr int64_t kCount = 65536;
  std::vector<uint16_t> storage(kCount + 1);
  for (int64_t i = 0; i < kCount; ++i) storage[i + 1] = uint16_t(i);
  // One byte in: unaligned 16-bit elements.
  std::vector<std::byte> bytes(kCount * 2 + 1);
  std::memcpy(bytes.data() + 1, storage.data() + 1, kCount * 2);
  std::vector<float> f32(kCount);
  std::vector<uint16_t> bf16(kCount);
  ConvertFloatElements(bytes.data() + 1, TSR_DTYPE_F16, f32.data(), TSR_DTYPE_F32, kCount);
  ConvertFloatElements(bytes.data() + 1, TSR_DTYPE_F16, bf16.data(), TSR_DTYPE_BF16, kCount);
  for (int64_t i = 0; i < kCount; ++i) {
    const float want = F16ToFloat(uint16_t(i));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(f32[i])) << i;
      EXPECT_TRUE(std::isnan(Bf16ToFloat(bf16[i]))) << i;
      continue;
    }
    EXPECT_EQ(std::memcmp(&f32[i], &want, sizeof(float)), 0) << i;
    EXPECT_EQ(bf16[i], FloatToBf16(want)) << i;
  }
}

}  // namespace
}  // namespace tessera::model
