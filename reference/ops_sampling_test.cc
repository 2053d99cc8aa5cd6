#include <cmath>

#include "reference/ops_test_util.h"

namespace tessera::reference {
namespace {

TEST(ArgmaxTest, RowsAndTies) {
  auto logits = F32({2, 4}, {1, 3, 3, 0, -5, -1, -2, -1});
  OwnedTensor ids(TSR_DTYPE_I32, {2});
  ASSERT_TRUE(RunOp(TSR_OP_ARGMAX, {logits.view()}, {ids.view()}).ok());
  EXPECT_EQ(ids.Values(), (std::vector<double>{1, 1}));
  auto bf = OwnedTensor::FromValues(TSR_DTYPE_BF16, {1, 3}, {0.5, 2, 2});
  ASSERT_TRUE(RunOp(TSR_OP_ARGMAX, {bf.view()}, {ids.view()}).ok() == false)
      << "ids shape [2] vs B = 1";
  OwnedTensor one(TSR_DTYPE_I32, {1});
  ASSERT_TRUE(RunOp(TSR_OP_ARGMAX, {bf.view()}, {one.view()}).ok());
  EXPECT_EQ(one.Values()[0], 1);
}

TEST(SampleOpTest, PerRowParameters) {
  // Row 0: greedy. Row 1: p = (0.1, 0.2, 0.3, 0.4), uniform 0.5 -> id 2.
  // Row 2: top_k 1 -> id 3 whatever uniform says.
  std::vector<double> row = {std::log(1.0), std::log(2.0), std::log(3.0),
                             std::log(4.0)};
  std::vector<double> all;
  for (int i = 0; i < 3; ++i) all.insert(all.end(), row.begin(), row.end());
  auto logits = F32({3, 4}, all);
  auto temperature = F32({3}, {0, 1, 1});
  auto top_k = I32({3}, {0, 0, 1});
  auto top_p = F32({3}, {1, 1, 1});
  auto min_p = F32({3}, {0, 0, 0});
  auto uniform = F32({3}, {0.99, 0.5, 0.99});
  OwnedTensor ids(TSR_DTYPE_I32, {3});
  ASSERT_TRUE(RunOp(TSR_OP_SAMPLE,
                    {logits.view(), temperature.view(), top_k.view(),
                     top_p.view(), min_p.view(), uniform.view()},
                    {ids.view()})
                  .ok());
  EXPECT_EQ(ids.Values(), (std::vector<double>{3, 2, 3}));
}

TEST(LogprobsTest, LogSoftmaxAndTopK) {
  // Row 0: logits (0, ln 3) -> p (0.25, 0.75). Row 1: a tie.
  auto logits = F32({2, 2}, {0, std::log(3.0), 1, 1});
  auto ids = I32({2}, {0, 1});
  OwnedTensor logprob(TSR_DTYPE_F32, {2});
  OwnedTensor top_ids(TSR_DTYPE_I32, {2, 2}), top_lp(TSR_DTYPE_F32, {2, 2});
  ASSERT_TRUE(RunOp(TSR_OP_LOGPROBS, {logits.view(), ids.view()},
                    {logprob.view(), top_ids.view(), top_lp.view()})
                  .ok());
  EXPECT_THAT(logprob,
              ValuesNear(std::vector<double>{std::log(0.25), std::log(0.5)}));
  EXPECT_EQ(top_ids.Values(), (std::vector<double>{1, 0, 0, 1}));
  EXPECT_THAT(top_lp,
              ValuesNear(std::vector<double>{std::log(0.75), std::log(0.25),
                                             std::log(0.5), std::log(0.5)}));
  // Without top-K (one output), and with K = 0.
  ASSERT_TRUE(
      RunOp(TSR_OP_LOGPROBS, {logits.view(), ids.view()}, {logprob.view()})
          .ok());
  OwnedTensor none_ids(TSR_DTYPE_I32, {2, 0}), none_lp(TSR_DTYPE_F32, {2, 0});
  ASSERT_TRUE(RunOp(TSR_OP_LOGPROBS, {logits.view(), ids.view()},
                    {logprob.view(), none_ids.view(), none_lp.view()})
                  .ok());
  auto bad_ids = I32({2}, {0, 2});
  EXPECT_FALSE(
      RunOp(TSR_OP_LOGPROBS, {logits.view(), bad_ids.view()}, {logprob.view()})
          .ok());
}

}  // namespace
}  // namespace tessera::reference
