#include "runtime/tensor.h"

#include <gtest/gtest.h>

namespace tessera::runtime {
namespace {

tsr_buffer FakeBuffer() { return reinterpret_cast<tsr_buffer>(0x1000); }

TEST(TensorViewTest, ContiguousStrides) {
  tsr_tensor t = MakeTensor(FakeBuffer(), TSR_DTYPE_F32, {2, 3, 4}, 16);
  EXPECT_EQ(t.ndim, 3);
  EXPECT_EQ(t.strides[0], 12);
  EXPECT_EQ(t.strides[1], 4);
  EXPECT_EQ(t.strides[2], 1);
  EXPECT_EQ(NumElements(t), 24);
  auto span = TensorByteSpan(t, "t");
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->begin, 16u);
  EXPECT_EQ(span->end, 16u + 24 * 4);
  EXPECT_EQ(TensorToString(t), "f32[2, 3, 4]");
}

TEST(TensorViewTest, StridedSpanCoversLastElementOnly) {
  // Rows of 3 bf16 elements with a row pitch of 8 elements.
  tsr_tensor t = MakeTensor(FakeBuffer(), TSR_DTYPE_BF16, {4, 3}, 6);
  t.strides[0] = 8;
  auto span = TensorByteSpan(t, "t");
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->begin, 6u);
  // last element index = 3*8 + 2 = 26 -> bytes up to (26+1)*2.
  EXPECT_EQ(span->end, 6u + 27 * 2);
  EXPECT_EQ(TensorToString(t), "bf16[4, 3] strides [8, 1]");
}

TEST(TensorViewTest, EmptyAndScalar) {
  tsr_tensor empty = MakeTensor(FakeBuffer(), TSR_DTYPE_F32, {0, 5}, 8);
  auto span = TensorByteSpan(empty, "t");
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->size(), 0u);
  tsr_tensor scalar = MakeTensor(FakeBuffer(), TSR_DTYPE_I64, {}, 0);
  span = TensorByteSpan(scalar, "t");
  ASSERT_TRUE(span.ok());
  EXPECT_EQ(span->size(), 8u);
}

TEST(TensorViewTest, RejectsBadDescriptors) {
  tsr_tensor t = MakeTensor(FakeBuffer(), TSR_DTYPE_F32, {2, 2});
  t.strides[1] = -1;
  EXPECT_FALSE(TensorByteSpan(t, "x").ok());
  t = MakeTensor(FakeBuffer(), TSR_DTYPE_INVALID, {2});
  EXPECT_FALSE(TensorByteSpan(t, "x").ok());
  t = MakeTensor(nullptr, TSR_DTYPE_F32, {2});
  auto s = TensorByteSpan(t, "input 0 of add");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("input 0 of add"), std::string::npos);
}

}  // namespace
}  // namespace tessera::runtime
