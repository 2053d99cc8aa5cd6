#include <cmath>

#include "reference/ops_test_util.h"

namespace tessera::reference {
namespace {

const tsr_rope_params kNeox{sizeof(tsr_rope_params), TSR_ROPE_NEOX};
const tsr_rope_params kInterleaved{sizeof(tsr_rope_params),
                                   TSR_ROPE_INTERLEAVED};

// One token at position 1, inv_freq (1, 0.5): angles 1 and 0.5.
struct RopeCase {
  OwnedTensor positions = I32({1}, {1});
  OwnedTensor inv_freq = F32({2}, {1, 0.5});
  OwnedTensor q = F32({1, 1, 4}, {1, 2, 3, 4});
  OwnedTensor k = F32({1, 1, 4}, {1, 2, 3, 4});
  OwnedTensor q_out{TSR_DTYPE_F32, {1, 1, 4}};
  OwnedTensor k_out{TSR_DTYPE_F32, {1, 1, 4}};
  Status Run(const tsr_rope_params& p) {
    return RunOp(TSR_OP_ROPE,
                 {positions.view(), inv_freq.view(), q.view(), k.view()},
                 {q_out.view(), k_out.view()}, &p);
  }
};

TEST(RopeTest, NeoxPairsIWithIPlusHalf) {
  RopeCase c;
  ASSERT_TRUE(c.Run(kNeox).ok());
  const double c1 = std::cos(1.0), s1 = std::sin(1.0);
  const double c5 = std::cos(0.5), s5 = std::sin(0.5);
  // pairs (0, 2) at angle 1 and (1, 3) at angle 0.5.
  std::vector<double> want = {1 * c1 - 3 * s1, 2 * c5 - 4 * s5, 3 * c1 + 1 * s1,
                              4 * c5 + 2 * s5};
  EXPECT_THAT(c.q_out, ValuesNear(want));
  EXPECT_THAT(c.k_out, ValuesNear(want));
}

TEST(RopeTest, InterleavedPairsAdjacentDims) {
  RopeCase c;
  ASSERT_TRUE(c.Run(kInterleaved).ok());
  const double c1 = std::cos(1.0), s1 = std::sin(1.0);
  const double c5 = std::cos(0.5), s5 = std::sin(0.5);
  std::vector<double> want = {1 * c1 - 2 * s1, 2 * c1 + 1 * s1, 3 * c5 - 4 * s5,
                              4 * c5 + 3 * s5};
  EXPECT_THAT(c.q_out, ValuesNear(want));
}

TEST(RopeTest, PartialRotaryPassesTheRestThroughInPlace) {
  RopeCase c;
  c.inv_freq = F32({1}, {1});  // R = 2 of D = 4
  ASSERT_TRUE(
      RunOp(TSR_OP_ROPE,
            {c.positions.view(), c.inv_freq.view(), c.q.view(), c.k.view()},
            {c.q.view(), c.k.view()}, &kNeox)
          .ok());
  const double c1 = std::cos(1.0), s1 = std::sin(1.0);
  EXPECT_THAT(c.q, ValuesNear(std::vector<double>{1 * c1 - 2 * s1,
                                                  2 * c1 + 1 * s1, 3, 4}));
}

TEST(RopeTest, PositionZeroIsIdentityAndGqaShapes) {
  auto positions = I32({2}, {0, 0});
  auto inv_freq = F32({1}, {0.3});
  auto q = F32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto k = F32({2, 1, 2}, {9, 10, 11, 12});
  OwnedTensor q_out(TSR_DTYPE_F32, {2, 2, 2}), k_out(TSR_DTYPE_F32, {2, 1, 2});
  ASSERT_TRUE(RunOp(TSR_OP_ROPE,
                    {positions.view(), inv_freq.view(), q.view(), k.view()},
                    {q_out.view(), k_out.view()}, &kNeox)
                  .ok());
  EXPECT_THAT(q_out, ValuesNear(q.Values()));
  EXPECT_THAT(k_out, ValuesNear(k.Values()));
}

TEST(RopeTest, ValidationErrors) {
  RopeCase c;
  c.inv_freq = F32({3}, {1, 1, 1});  // R = 6 > D = 4
  EXPECT_FALSE(c.Run(kNeox).ok());
  RopeCase d;
  tsr_rope_params bad{sizeof(tsr_rope_params), 7};
  EXPECT_FALSE(d.Run(bad).ok());
}

}  // namespace
}  // namespace tessera::reference
