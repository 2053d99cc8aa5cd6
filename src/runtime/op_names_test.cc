#include "runtime/op_names.h"

#include <gtest/gtest.h>

namespace tessera::runtime {
namespace {

TEST(OpNamesTest, EveryV1OpRoundTrips) {
  ASSERT_EQ(AllOpsV1().size(), 13u);
  for (tsr_op_id op : AllOpsV1()) {
    auto back = OpIdFromName(OpName(op));
    ASSERT_TRUE(back.has_value()) << OpName(op);
    EXPECT_EQ(*back, op);
  }
  EXPECT_EQ(OpName(TSR_OP_RMS_NORM), "rms_norm");
  EXPECT_EQ(OpName(TSR_OP_PAGED_ATTENTION), "paged_attention");
  EXPECT_EQ(OpName(TSR_OP_FUSED_BASE + 2), "fused_1002");
  EXPECT_EQ(OpName(77), "op_77");
  EXPECT_FALSE(OpIdFromName("rmsnorm").has_value());
}

TEST(OpNamesTest, ParsesLists) {
  auto ops = ParseOpNameList(" rms_norm, linear,,", "TESSERA_DISABLE_OPS");
  ASSERT_TRUE(ops.ok()) << ops.status().ToString();
  EXPECT_EQ(*ops, (std::set<tsr_op_id>{TSR_OP_RMS_NORM, TSR_OP_LINEAR}));
  auto empty = ParseOpNameList("", "TESSERA_DISABLE_OPS");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(OpNamesTest, UnknownNameListsValidOnes) {
  auto ops = ParseOpNameList("rms_norm,softmax", "TESSERA_DISABLE_OPS");
  ASSERT_FALSE(ops.ok());
  EXPECT_EQ(ops.status().code(), StatusCode::kInvalidArgument);
  const std::string m = ops.status().message();
  EXPECT_NE(m.find("TESSERA_DISABLE_OPS"), std::string::npos) << m;
  EXPECT_NE(m.find("'softmax'"), std::string::npos) << m;
  for (tsr_op_id op : AllOpsV1()) {
    EXPECT_NE(m.find(OpName(op)), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tessera::runtime
