// Tensor parallelism in the model runner: two ranks (threads of this
// process, each a runner on its own cpu virtual device, joined through the
// plugin's cross-process communicator) give the logits of one unsharded
// runner — prefill and decode through the paged cache, decode steps as
// graph replays with the collectives captured — for a tied model
// with o biases and fewer KV heads than ranks (replicated), a qk-norm
// model, and BF16; and the shard plan refuses sizes that do not divide.
#include <thread>

#include "model/model_runner.h"
#include "model/runner_test_util.h"
#include "model/tensor_parallel.h"
#include "runtime/communicator.h"

namespace tessera::model::testing {
namespace {

// n ids in [0, vocab), deterministic.
std::vector<int32_t> PromptIds(int64_t n, int64_t vocab, uint32_t seed) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) {
    ids.push_back(static_cast<int32_t>((seed * 7919 + i * 104729) % vocab));
  }
  return ids;
}

struct TpCase {
  const char* name;
  Architecture arch;
  DType activation_dtype;
  bool custom;  // MakeCustomCheckpoint (tied, biases, 1 KV head)
  double tolerance;
};

class TensorParallelRunnerTest : public ::testing::TestWithParam<TpCase> {
 protected:
  void SetUp() override {
    const TpCase& c = GetParam();
    auto ckpt = c.custom ? MakeCustomCheckpoint(dir_.path().string(), c.arch)
                         : MakeCheckpoint(dir_.path().string(), c.arch, TSR_DTYPE_F32);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status().ToString();
    checkpoint_ = std::move(ckpt).value();
    auto rt = CreateRuntime();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
    ASSERT_GE(runtime_->num_devices(), 2) << "TESSERA_CPU_DEVICES=2 is set by the fixture";
  }

  // Two ranks against one runner, step by step; `fused`: the layers run as
  // decoder_layer (v2 on the ranks, the all-reduces inside) or as op
  // sequences.
  void CheckTwoRanks(bool fused);

  ModelRunnerOptions Options(int device) const {
    ModelRunnerOptions o;
    o.fused_decoder_layer = fused_;
    o.activation_dtype = GetParam().activation_dtype;
    o.page_size = 4;
    o.kv_capacity_tokens = 128;
    o.max_batch_tokens = 8;
    o.device = device;
    o.show_progress = false;
    return o;
  }

  bool fused_ = true;
  ScopedEnvVar devices_{"TESSERA_CPU_DEVICES", "2"};
  ScratchDir dir_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::unique_ptr<runtime::Runtime> runtime_;
};

void TensorParallelRunnerTest::CheckTwoRanks(bool fused) {
  fused_ = fused;
  auto whole = ModelRunner::Create(*runtime_, *checkpoint_, Options(0));
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();

  // Two ranks on devices 0 and 1, joined from two threads.
  runtime::Plugin& plugin = runtime_->plugin();
  auto id = runtime::Communicator::UniqueId(plugin);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  std::vector<runtime::CommunicatorPtr> comms(2);
  std::vector<std::unique_ptr<ModelRunner>> ranks(2);
  std::vector<Status> status(2);
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        auto comm = runtime::Communicator::CreateRank(plugin, *id, 2, r, r);
        if (!comm.ok()) {
          status[r] = comm.status();
          return;
        }
        comms[r] = std::move(comm).value();
        ModelRunnerOptions o = Options(r);
        o.comm = comms[r].get();
        auto runner = ModelRunner::Create(*runtime_, *checkpoint_, o);
        if (!runner.ok()) {
          status[r] = runner.status();
          return;
        }
        ranks[r] = std::move(runner).value();
      });
    }
    for (auto& t : threads) t.join();
  }
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].ToString();
  EXPECT_EQ(ranks[0]->tp().size, 2);
  EXPECT_EQ(ranks[0]->uses_fused_layers(), fused);
  EXPECT_EQ((*whole)->uses_fused_layers(), fused);
  const int64_t vocab = checkpoint_->config().vocab_size;

  // One sequence: a 7-token prefill, then 4 greedy decode steps.
  std::vector<int32_t> tokens = PromptIds(7, vocab, 3);
  std::vector<int32_t> whole_pages;
  std::vector<std::vector<int32_t>> rank_pages(2);
  int64_t cached = 0;
  for (int step = 0; step < 5; ++step) {
    const int64_t len = cached + static_cast<int64_t>(tokens.size());
    ASSERT_TRUE((*whole)->kv_pool().EnsureCapacity(whole_pages, len).ok());
    Batch batch;
    batch.sequences.push_back({tokens, cached, whole_pages});
    auto want = (*whole)->Forward(batch);
    ASSERT_TRUE(want.ok()) << want.status().ToString();

    std::vector<StatusOr<Logits>> got(2, InternalError("not run"));
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(ranks[r]->kv_pool().EnsureCapacity(rank_pages[r], len).ok());
      threads.emplace_back([&, r] {
        Batch b;
        b.sequences.push_back({tokens, cached, rank_pages[r]});
        got[r] = ranks[r]->Forward(b);
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < 2; ++r) {
      ASSERT_TRUE(got[r].ok()) << "rank " << r << ": " << got[r].status().ToString();
      ASSERT_EQ(got[r]->vocab, vocab);
    }
    // Both ranks hold the same (gathered) logits.
    EXPECT_EQ(got[0]->data, got[1]->data) << "step " << step;
    std::vector<double> ref(want->data.begin(), want->data.end());
    const double err = RelativeError(got[0]->Row(0), ref);
    EXPECT_LE(err, GetParam().tolerance) << "step " << step << ": relative error " << err;
    EXPECT_EQ(ArgmaxRow(got[0]->Row(0)), ArgmaxRow(want->Row(0))) << "step " << step;
    cached = len;
    tokens = {ArgmaxRow(want->Row(0))};
  }
  // The decode steps replayed captured graphs, collectives included.
  EXPECT_GT(ranks[0]->graph_replays(), 0);
  EXPECT_EQ(ranks[0]->graph_replays(), ranks[1]->graph_replays());
}

TEST_P(TensorParallelRunnerTest, TwoRanksGiveTheLogitsOfOne) { CheckTwoRanks(/*fused=*/true); }

TEST_P(TensorParallelRunnerTest, TwoRanksUnfusedGiveTheLogitsOfOne) {
  CheckTwoRanks(/*fused=*/false);
}

INSTANTIATE_TEST_SUITE_P(
    Models, TensorParallelRunnerTest,
    ::testing::Values(
        // Tied + vocabulary split, o bias on rank 0 only, 1 KV head for 2 ranks.
        TpCase{"llama_custom", Architecture::kLlama, TSR_DTYPE_F32, true, 1e-4},
        TpCase{"qwen2_custom", Architecture::kQwen2, TSR_DTYPE_F32, true, 1e-4},
        // qk norm, 2 KV heads split one per rank.
        TpCase{"qwen3_tiny", Architecture::kQwen3, TSR_DTYPE_F32, false, 1e-4},
        // Partial sums rounded to BF16 before the all-reduce.
        TpCase{"qwen3_tiny_bf16", Architecture::kQwen3, TSR_DTYPE_BF16, false, 5e-2}),
    [](const ::testing::TestParamInfo<TpCase>& info) { return std::string(info.param.name); });

TEST(TpShardTest, SplitsHeadsMlpAndVocabularyOrRefuses) {
  ModelConfig c;
  c.num_attention_heads = 16;
  c.num_key_value_heads = 8;
  c.intermediate_size = 3072;
  c.vocab_size = 151936;
  auto s = PlanTpShard(c, 1, 4);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->q_heads, 4);
  EXPECT_EQ(s->q_head_begin, 4);
  EXPECT_EQ(s->kv_heads, 2);
  EXPECT_EQ(s->kv_head_begin, 2);
  EXPECT_EQ(s->inter, 768);
  EXPECT_EQ(s->inter_begin, 768);
  EXPECT_TRUE(s->vocab_split);
  EXPECT_EQ(s->vocab, 37984);
  // Fewer KV heads than ranks: replicated, each rank the one its queries read.
  c.num_key_value_heads = 2;
  s = PlanTpShard(c, 3, 8);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kv_heads, 1);
  EXPECT_EQ(s->kv_head_begin, 0);  // query heads 6, 7 read KV head 0 (8 per KV head)
  s = PlanTpShard(c, 5, 8);
  EXPECT_EQ(s->kv_head_begin, 1);
  // A vocabulary the size does not divide: lm_head replicated.
  c.vocab_size = 151937;
  s = PlanTpShard(c, 0, 2);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->vocab_split);
  EXPECT_EQ(s->vocab, 151937);
  // Heads the size does not divide: refused, naming them.
  s = PlanTpShard(c, 0, 3);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("16 attention heads"), std::string::npos);
  c.num_attention_heads = 12;
  c.num_key_value_heads = 4;
  s = PlanTpShard(c, 0, 3);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("4 KV heads"), std::string::npos);
}

}  // namespace
}  // namespace tessera::model::testing
