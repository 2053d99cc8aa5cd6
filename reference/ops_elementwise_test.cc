#include <cmath>
#include <limits>

#include "reference/ops_test_util.h"

namespace tessera::reference {
namespace {

TEST(EmbeddingTest, GathersRows) {
  auto ids = I32({3}, {2, 0, 2});
  auto table = F32({3, 2}, {1, 2, 3, 4, 5, 6});
  OwnedTensor y(TSR_DTYPE_F32, {3, 2});
  ASSERT_TRUE(
      RunOp(TSR_OP_EMBEDDING, {ids.view(), table.view()}, {y.view()}).ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{5, 6, 1, 2, 5, 6}));
}

TEST(EmbeddingTest, OutOfRangeIdIsAnErrorAndWritesNothing) {
  auto ids = I32({2}, {0, 3});
  auto table = F32({3, 1}, {1, 2, 3});
  auto y = F32({2, 1}, {-7, -7});
  Status s = RunOp(TSR_OP_EMBEDDING, {ids.view(), table.view()}, {y.view()});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("ids[1] = 3"), std::string::npos) << s.message();
  EXPECT_THAT(y, ValuesNear(std::vector<double>{-7, -7}));
}

TEST(EmbeddingTest, ShardGivesItsRowsAndZerosForOtherIds) {
  // Rows 2..3 of a vocabulary of 5; ids 1 and 4 belong to other shards.
  auto ids = I32({4}, {3, 1, 2, 4});
  auto table = F32({2, 2}, {20, 21, 30, 31});
  auto y = F32({4, 2}, {-7, -7, -7, -7, -7, -7, -7, -7});
  tsr_embedding_shard_params p{};
  p.struct_size = sizeof(p);
  p.row_begin = 2;
  std::vector<HostTensor> out = {y.view()};
  ASSERT_TRUE(RunReferenceOp(TSR_OP_EMBEDDING, kEmbeddingShardVersion,
                             std::vector<HostTensor>{ids.view(), table.view()}, out, &p)
                  .ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{30, 31, 0, 0, 20, 21, 0, 0}));
  p.row_begin = -1;
  EXPECT_FALSE(RunReferenceOp(TSR_OP_EMBEDDING, kEmbeddingShardVersion,
                              std::vector<HostTensor>{ids.view(), table.view()}, out, &p)
                   .ok());
}

TEST(SiluAndMulTest, HandComputed) {
  // x = [1, 0 | 2, 3]: y = (silu(1) * 2, silu(0) * 3) = (1.4621172, 0).
  auto x = F32({1, 4}, {1, 0, 2, 3});
  OwnedTensor y(TSR_DTYPE_F32, {1, 2});
  ASSERT_TRUE(RunOp(TSR_OP_SILU_AND_MUL, {x.view()}, {y.view()}).ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{2 / (1 + std::exp(-1.0)), 0}));
  auto odd = F32({1, 3}, {1, 2, 3});
  EXPECT_FALSE(RunOp(TSR_OP_SILU_AND_MUL, {odd.view()}, {y.view()}).ok());
}

TEST(AddTest, TransposedAndAliased) {
  std::vector<float> a_data = {1, 2, 3, 4, 5, 6};  // [2, 3] row-major
  HostTensor a_t{a_data.data(), TSR_DTYPE_F32, {3, 2}, {1, 3}};  // transpose
  auto b = F32({3, 2}, {10, 20, 30, 40, 50, 60});
  OwnedTensor y(TSR_DTYPE_F32, {3, 2});
  ASSERT_TRUE(RunOp(TSR_OP_ADD, {a_t, b.view()}, {y.view()}).ok());
  EXPECT_THAT(y, ValuesNear(std::vector<double>{11, 24, 32, 45, 53, 66}));
  // y aliases b exactly: b += a.
  ASSERT_TRUE(RunOp(TSR_OP_ADD, {a_t, b.view()}, {b.view()}).ok());
  EXPECT_THAT(b, ValuesNear(std::vector<double>{11, 24, 32, 45, 53, 66}));
  // Scalars (rank 0) are tensors too.
  auto s1 = F32({}, {1.5}), s2 = F32({}, {2});
  OwnedTensor s3(TSR_DTYPE_F32, {});
  ASSERT_TRUE(RunOp(TSR_OP_ADD, {s1.view(), s2.view()}, {s3.view()}).ok());
  EXPECT_EQ(s3.Values()[0], 3.5);
}

TEST(AddTest, RoundsOnceToTheDtype) {
  // bf16: 256 + 1 = 257 is a tie between 256 and 258: round to even (256).
  auto a = OwnedTensor::FromValues(TSR_DTYPE_BF16, {2}, {256, 256});
  auto b = OwnedTensor::FromValues(TSR_DTYPE_BF16, {2}, {1, 3});
  OwnedTensor y(TSR_DTYPE_BF16, {2});
  ASSERT_TRUE(RunOp(TSR_OP_ADD, {a.view(), b.view()}, {y.view()}).ok());
  EXPECT_EQ(y.Values(), (std::vector<double>{256, 260}));
}

TEST(CastTest, RoundsToNearestEven) {
  auto x = F32({5}, {1.0 + 1.0 / 256, 1.0 + 3.0 / 256, 70000, -2.5, 1e-8});
  OwnedTensor to_bf16(TSR_DTYPE_BF16, {5}), to_f16(TSR_DTYPE_F16, {5});
  ASSERT_TRUE(RunOp(TSR_OP_CAST, {x.view()}, {to_bf16.view()}).ok());
  ASSERT_TRUE(RunOp(TSR_OP_CAST, {x.view()}, {to_f16.view()}).ok());
  std::vector<double> bf = to_bf16.Values();
  EXPECT_EQ(bf[0], 1.0);              // tie -> even
  EXPECT_EQ(bf[1], 1.0 + 4.0 / 256);  // tie -> even (up)
  EXPECT_EQ(bf[2], 70144);            // 70000 in bf16
  EXPECT_EQ(bf[3], -2.5);
  std::vector<double> h = to_f16.Values();
  EXPECT_EQ(h[0], 1.0 + 1.0 / 256);  // exact in f16
  EXPECT_TRUE(std::isinf(h[2]));     // overflow
  EXPECT_EQ(h[4], 0.0);              // below half the smallest subnormal
  // And back: f16 -> f32 is exact.
  OwnedTensor back(TSR_DTYPE_F32, {5});
  ASSERT_TRUE(RunOp(TSR_OP_CAST, {to_f16.view()}, {back.view()}).ok());
  EXPECT_EQ(back.Values()[3], -2.5);
  OwnedTensor wrong(TSR_DTYPE_F32, {4});
  EXPECT_FALSE(RunOp(TSR_OP_CAST, {x.view()}, {wrong.view()}).ok());
}

}  // namespace
}  // namespace tessera::reference
