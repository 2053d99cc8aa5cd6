#include "reference/op_contracts.h"

#include <gtest/gtest.h>

namespace tessera::reference {
namespace {

TEST(OpContractsTest, NamesAndIds) {
  EXPECT_EQ(OpName(TSR_OP_PAGED_ATTENTION), "paged_attention");
  EXPECT_EQ(OpName(99), "");
  EXPECT_EQ(AllOps().size(), 13u);
  EXPECT_EQ(AllOps().front(), TSR_OP_EMBEDDING);
}

TEST(OpContractsTest, LinearSignatures) {
  const DType f32 = TSR_DTYPE_F32, bf16 = TSR_DTYPE_BF16, f16 = TSR_DTYPE_F16;
  EXPECT_TRUE(
      ValidateSignature(TSR_OP_LINEAR, 1, std::vector{bf16, f16, bf16}).ok());
  EXPECT_TRUE(
      ValidateSignature(TSR_OP_LINEAR, 1, std::vector{f32, f32, f32, f32})
          .ok());
  // F16 activations are not in the contract; W must equal A or be F16.
  Status s = ValidateSignature(TSR_OP_LINEAR, 1, std::vector{f16, f16, f16});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("allows"), std::string::npos) << s.message();
  EXPECT_FALSE(
      ValidateSignature(TSR_OP_LINEAR, 1, std::vector{f32, bf16, f32}).ok());
  EXPECT_FALSE(ValidateSignature(TSR_OP_LINEAR, 1, std::vector{f32, f32}).ok());
}

TEST(OpContractsTest, UnknownOpAndVersion) {
  std::vector<DType> sig = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32};
  EXPECT_EQ(ValidateSignature(0, 1, sig).code(), StatusCode::kNotFound);
  EXPECT_EQ(ValidateSignature(1001, 1, sig).code(), StatusCode::kNotFound);
  EXPECT_EQ(ValidateSignature(TSR_OP_DECODER_LAYER, 5, sig).code(),
            StatusCode::kNotFound);
  EXPECT_EQ(ValidateSignature(TSR_OP_LINEAR, 6, sig).code(), StatusCode::kNotFound);
  // v5 (ABI 1.8, w6a8) exists for Q6_K (U8) weights with F16 d's only.
  EXPECT_EQ(ValidateSignature(TSR_OP_LINEAR, 5, sig).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateSignature(TSR_OP_LINEAR, 5,
                                std::vector<DType>{TSR_DTYPE_F32, TSR_DTYPE_U8, TSR_DTYPE_F16,
                                                   TSR_DTYPE_F32})
                  .ok());
  // v4 (ABI 1.6, w4a8) exists for packed 4-bit (U8) weights only.
  EXPECT_EQ(ValidateSignature(TSR_OP_DECODER_LAYER, 4, sig).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateSignature(TSR_OP_DECODER_LAYER, 4,
                                std::vector<DType>{TSR_DTYPE_BF16, TSR_DTYPE_U8, TSR_DTYPE_F32})
                  .ok());
  EXPECT_EQ(ValidateSignature(TSR_OP_LINEAR, 4, sig).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateSignature(TSR_OP_LINEAR, 4,
                                std::vector<DType>{TSR_DTYPE_F32, TSR_DTYPE_U8, TSR_DTYPE_F16,
                                                   TSR_DTYPE_F32})
                  .ok());
  // v3 (ABI 1.5, w8a8) exists for int8 weights only.
  EXPECT_EQ(ValidateSignature(TSR_OP_DECODER_LAYER, 3, sig).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(ValidateSignature(TSR_OP_DECODER_LAYER, 3,
                                std::vector<DType>{TSR_DTYPE_F32, TSR_DTYPE_I8,
                                                   TSR_DTYPE_BF16})
                  .ok());
  EXPECT_TRUE(ValidateSignature(TSR_OP_LINEAR, 3,
                                std::vector<DType>{TSR_DTYPE_BF16, TSR_DTYPE_I8,
                                                   TSR_DTYPE_F32, TSR_DTYPE_BF16})
                  .ok());
  // v2 (ABI 1.4, a tensor-parallel rank) has v1's signatures.
  EXPECT_TRUE(ValidateSignature(TSR_OP_DECODER_LAYER, 2, sig).ok());
  // decoder_layer's signature is its classes (X, W, KV).
  EXPECT_TRUE(ValidateSignature(TSR_OP_DECODER_LAYER, 1, sig).ok());
  EXPECT_TRUE(ValidateSignature(TSR_OP_DECODER_LAYER, 1,
                                std::vector<DType>{TSR_DTYPE_BF16, TSR_DTYPE_I8,
                                                   TSR_DTYPE_F32})
                  .ok());
  EXPECT_FALSE(ValidateSignature(TSR_OP_DECODER_LAYER, 1,
                                 std::vector<DType>{TSR_DTYPE_F32, TSR_DTYPE_F32})
                   .ok());
  EXPECT_FALSE(ValidateSignature(TSR_OP_DECODER_LAYER, 1,
                                 std::vector<DType>{TSR_DTYPE_F32, TSR_DTYPE_BF16,
                                                    TSR_DTYPE_F32})
                   .ok());
  EXPECT_EQ(ValidateSignature(TSR_OP_ADD, 2, sig).code(),
            StatusCode::kNotFound);
  EXPECT_TRUE(ValidateSignature(TSR_OP_ADD, 1, sig).ok());
}

TEST(OpContractsTest, SplitArgs) {
  EXPECT_EQ(SplitArgs(TSR_OP_LOGPROBS, 5)->num_outputs, 3);
  EXPECT_EQ(SplitArgs(TSR_OP_LINEAR, 4)->num_inputs, 3);
  EXPECT_EQ(SplitArgs(TSR_OP_PAGED_ATTENTION, 7)->num_inputs, 6);
  EXPECT_FALSE(SplitArgs(TSR_OP_ROPE, 5).ok());
}

TEST(OpContractsTest, EveryAllowedSignatureValidates) {
  for (tsr_op_id op : AllOps()) {
    auto sigs = AllowedSignatures(op);
    EXPECT_FALSE(sigs.empty()) << OpName(op);
    for (const auto& sig : sigs) {
      EXPECT_TRUE(ValidateSignature(op, 1, sig).ok()) << OpName(op);
    }
  }
  EXPECT_EQ(AllowedSignatures(TSR_OP_CAST).size(), 9u);
  EXPECT_EQ(AllowedSignatures(TSR_OP_LINEAR).size(), 8u);
}

TEST(OpContractsTest, Tags) {
  EXPECT_EQ(SignatureTag(TSR_OP_LINEAR,
                         std::vector<DType>{TSR_DTYPE_BF16, TSR_DTYPE_F16,
                                            TSR_DTYPE_BF16, TSR_DTYPE_BF16}),
            "bf16_wf16_bias");
  EXPECT_EQ(SignatureTag(TSR_OP_CAST,
                         std::vector<DType>{TSR_DTYPE_F32, TSR_DTYPE_F16}),
            "f32_to_f16");
  EXPECT_EQ(SignatureTag(TSR_OP_EMBEDDING,
                         std::vector<DType>{TSR_DTYPE_I32, TSR_DTYPE_BF16,
                                            TSR_DTYPE_BF16}),
            "bf16");
}

}  // namespace
}  // namespace tessera::reference
