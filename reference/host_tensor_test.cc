#include "reference/host_tensor.h"

#include <gtest/gtest.h>

namespace tessera::reference {
namespace {

TEST(HostTensorTest, ContiguousStridesAndOffsets) {
  OwnedTensor t(TSR_DTYPE_F32, {2, 3, 4});
  EXPECT_EQ(t.view().strides, (std::vector<int64_t>{12, 4, 1}));
  int64_t index[] = {1, 2, 3};
  EXPECT_EQ(t.view().Offset(index), 23);
  EXPECT_EQ(t.view().NumElements(), 24);
  EXPECT_EQ(t.view().ExtentElements(), 24);
}

TEST(HostTensorTest, TransposedViewVisitsInLogicalOrder) {
  // A [3, 2] view of a [2, 3] row-major buffer (its transpose).
  std::vector<float> data = {0, 1, 2, 3, 4, 5};
  HostTensor t{data.data(), TSR_DTYPE_F32, {3, 2}, {1, 3}};
  std::vector<int64_t> offsets = ElementOffsets(t);
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(t.Load(offsets[1]), 3.0);
  EXPECT_EQ(RowOffsets(t), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(t.ExtentElements(), 6);
}

TEST(HostTensorTest, EmptyAndScalar) {
  HostTensor empty{nullptr, TSR_DTYPE_F32, {0, 5}, {5, 1}};
  EXPECT_TRUE(ElementOffsets(empty).empty());
  EXPECT_EQ(empty.ExtentElements(), 0);
  float v = 2.5f;
  HostTensor scalar{&v, TSR_DTYPE_F32, {}, {}};
  EXPECT_EQ(ElementOffsets(scalar), (std::vector<int64_t>{0}));
  EXPECT_EQ(scalar.NumElements(), 1);
}

TEST(HostTensorTest, OwnedTensorRoundsAndCopies) {
  auto t = OwnedTensor::FromValues(TSR_DTYPE_BF16, {2}, {1.0, 1.0 + 1.0 / 256});
  EXPECT_EQ(t.Values(), (std::vector<double>{1.0, 1.0}));  // ties to even
  OwnedTensor copy = t;
  copy.view().Store(0, 3.0);
  EXPECT_EQ(t.Values()[0], 1.0);
  EXPECT_EQ(copy.Values()[0], 3.0);
  auto ints = OwnedTensor::FromValues(TSR_DTYPE_I32, {3}, {-1, 7, 9});
  EXPECT_EQ(ints.view().LoadInt(1), 7);
  EXPECT_EQ(ShapeString(ints.view().shape), "[3]");
}

}  // namespace
}  // namespace tessera::reference
