#include <cmath>

#include "reference/ops_test_util.h"

namespace tessera::reference {
namespace {

TEST(KvStoreTest, WritesNamedSlotsAndSkipsPadding) {
  // T = 3 tokens, Hk = 1, D = 2, S = 4 slots.
  auto k = F32({3, 1, 2}, {1, 2, 3, 4, 5, 6});
  auto v = F32({3, 1, 2}, {-1, -2, -3, -4, -5, -6});
  auto slots = I32({3}, {2, -1, 0});
  auto k_cache = F32({4, 1, 2}, std::vector<double>(8, 9));
  auto v_cache = F32({4, 1, 2}, std::vector<double>(8, 9));
  ASSERT_TRUE(RunOp(TSR_OP_KV_STORE, {k.view(), v.view(), slots.view()},
                    {k_cache.view(), v_cache.view()})
                  .ok());
  EXPECT_THAT(k_cache, ValuesNear(std::vector<double>{5, 6, 9, 9, 1, 2, 9, 9}));
  EXPECT_THAT(v_cache,
              ValuesNear(std::vector<double>{-5, -6, 9, 9, -1, -2, 9, 9}));
}

TEST(KvStoreTest, SlotOutsideThePoolIsAnError) {
  auto k = F32({2, 1, 1}, {1, 2});
  auto slots = I32({2}, {0, 4});
  auto k_cache = F32({4, 1, 1}, {9, 9, 9, 9});
  auto v_cache = F32({4, 1, 1}, {9, 9, 9, 9});
  Status s = RunOp(TSR_OP_KV_STORE, {k.view(), k.view(), slots.view()},
                   {k_cache.view(), v_cache.view()});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("slots[1] = 4"), std::string::npos) << s.message();
  EXPECT_THAT(k_cache, ValuesNear(std::vector<double>{9, 9, 9, 9}));
}

// A pool of S = 4 slots (2 pages of 2), Hk = 1, D = 1. Position p of the
// sequence lives at block_table[p / 2] * 2 + p % 2; block_table = (1, 0)
// puts positions 0, 1 at slots 2, 3 and position 2 at slot 0.
struct AttentionCase {
  OwnedTensor k_cache = F32({4, 1, 1}, {0, 0, 0, 0});
  OwnedTensor v_cache = F32({4, 1, 1}, {3, 100, 1, 2});  // v(pos) = pos + 1
  OwnedTensor block_table = I32({1, 2}, {1, 0});
  tsr_paged_attention_params params{sizeof(tsr_paged_attention_params), 1.0f, 2,
                                    0, 0.0f};
  Status Run(const OwnedTensor& q, const OwnedTensor& seq_lens,
             const OwnedTensor& query_start, OwnedTensor& o) {
    return RunOp(TSR_OP_PAGED_ATTENTION,
                 {q.view(), k_cache.view(), v_cache.view(), block_table.view(),
                  seq_lens.view(), query_start.view()},
                 {o.view()}, &params);
  }
};

TEST(PagedAttentionTest, DecodeAveragesWhenScoresAreEqual) {
  AttentionCase c;
  auto q = F32({1, 1, 1}, {1});
  OwnedTensor o(TSR_DTYPE_F32, {1, 1, 1});
  ASSERT_TRUE(c.Run(q, I32({1}, {3}), I32({2}, {0, 1}), o).ok());
  EXPECT_THAT(o, ValuesNear(std::vector<double>{2}));  // mean(1, 2, 3)
}

TEST(PagedAttentionTest, PrefillIsCausal) {
  AttentionCase c;
  auto q = F32({3, 1, 1}, {1, 1, 1});
  OwnedTensor o(TSR_DTYPE_F32, {3, 1, 1});
  ASSERT_TRUE(c.Run(q, I32({1}, {3}), I32({2}, {0, 3}), o).ok());
  EXPECT_THAT(o, ValuesNear(std::vector<double>{1, 1.5, 2}));
  // Prefill of 2 new tokens over a cached prefix of 1: positions 1 and 2.
  OwnedTensor o2(TSR_DTYPE_F32, {2, 1, 1});
  auto q2 = F32({2, 1, 1}, {1, 1});
  ASSERT_TRUE(c.Run(q2, I32({1}, {3}), I32({2}, {0, 2}), o2).ok());
  EXPECT_THAT(o2, ValuesNear(std::vector<double>{1.5, 2}));
}

TEST(PagedAttentionTest, SlidingWindowKeepsTheLastWPositions) {
  AttentionCase c;
  c.params.sliding_window = 2;
  auto q = F32({3, 1, 1}, {1, 1, 1});
  OwnedTensor o(TSR_DTYPE_F32, {3, 1, 1});
  ASSERT_TRUE(c.Run(q, I32({1}, {3}), I32({2}, {0, 3}), o).ok());
  EXPECT_THAT(o, ValuesNear(std::vector<double>{1, 1.5, 2.5}));
}

TEST(PagedAttentionTest, ScaleAndSoftcap) {
  AttentionCase c;
  c.k_cache = F32({4, 1, 1}, {0, 0, 10, 0});  // k(pos 0) = 10, others 0
  c.params.logit_softcap = 1.0f;
  auto q = F32({1, 1, 1}, {1});
  OwnedTensor o(TSR_DTYPE_F32, {1, 1, 1});
  ASSERT_TRUE(c.Run(q, I32({1}, {2}), I32({2}, {0, 1}), o).ok());
  // scores (tanh(10), tanh(0)) ~ (1, 0): weights e/(e+1), 1/(e+1).
  double e = std::exp(std::tanh(10.0));
  EXPECT_THAT(o, ValuesNear(std::vector<double>{(e * 1 + 1 * 2) / (e + 1)}));
  c.params.logit_softcap = 0;
  c.params.scale = 0.1f;  // scores (1, 0) again, by scaling instead
  ASSERT_TRUE(c.Run(q, I32({1}, {2}), I32({2}, {0, 1}), o).ok());
  double e1 = std::exp(double(0.1f) * 10);
  EXPECT_THAT(o, ValuesNear(std::vector<double>{(e1 * 1 + 2) / (e1 + 1)}));
}

TEST(PagedAttentionTest, RaggedBatchWithGqa) {
  // Two sequences share the pool: seq 0 decodes at position 2 (pages 1, 0),
  // seq 1 prefills 1 token with L = 1 on page 1 (slot 2: v = 1).
  AttentionCase c;
  c.block_table = I32({2, 2}, {1, 0, 1, 0});
  // Hq = 2 query heads share the single KV head.
  auto q = F32({2, 2, 1}, {1, 1, 1, 1});
  OwnedTensor o(TSR_DTYPE_F32, {2, 2, 1});
  ASSERT_TRUE(c.Run(q, I32({2}, {3, 1}), I32({3}, {0, 1, 2}), o).ok());
  EXPECT_THAT(o, ValuesNear(std::vector<double>{2, 2, 1, 1}));
}

TEST(PagedAttentionTest, BadLayoutsAreErrors) {
  AttentionCase c;
  auto q = F32({1, 1, 1}, {1});
  OwnedTensor o(TSR_DTYPE_F32, {1, 1, 1});
  EXPECT_FALSE(c.Run(q, I32({1}, {5}), I32({2}, {0, 1}), o).ok())
      << "L beyond P * page_size";
  EXPECT_FALSE(c.Run(q, I32({1}, {0}), I32({2}, {0, 1}), o).ok())
      << "L smaller than the new tokens";
  c.block_table = I32({1, 2}, {2, 0});  // page 2 does not exist
  EXPECT_FALSE(c.Run(q, I32({1}, {1}), I32({2}, {0, 1}), o).ok());
  AttentionCase gqa;
  auto q3 = F32({1, 3, 1}, {1, 1, 1});
  OwnedTensor o3(TSR_DTYPE_F32, {1, 3, 1});
  gqa.k_cache = F32({4, 2, 1}, std::vector<double>(8, 0));
  gqa.v_cache = F32({4, 2, 1}, std::vector<double>(8, 0));
  EXPECT_FALSE(gqa.Run(q3, I32({1}, {1}), I32({2}, {0, 1}), o3).ok())
      << "Hq = 3 is not a multiple of Hk = 2";
}

}  // namespace
}  // namespace tessera::reference
