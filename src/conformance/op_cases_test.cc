// The kit's own cases must be valid for the reference, and the comparison
// must catch what it claims to catch.
#include <gtest/gtest.h>

#include <cstring>

#include "conformance/op_cases.h"
#include "conformance/op_harness.h"
#include "conformance/plugin_check.h"
#include "reference/op_contracts.h"

namespace tessera::conformance {
namespace {

TEST(OpCasesTest, EveryCaseOfEverySignatureRunsOnTheReference) {
  int count = 0;
  for (tsr_op_id op : reference::AllOps()) {
    // Every op's v1, and linear v2 / v3 (with decoder_layer v2 / v3, and
    // embedding v2; AllowedSignatures is empty otherwise).
    for (uint32_t version : {reference::kOpVersion, reference::kLinearW8Version,
                             reference::kLinearW8A8Version}) {
      for (const auto& dtypes : reference::AllowedSignatures(op, version)) {
        CaseList cases = MakeOpCases(op, dtypes, version);
        EXPECT_GE(cases.size(), 5u) << reference::OpName(op);
        for (const CaseDef& def : cases) {
          std::string name = std::string(reference::OpName(op)) + "." +
                             reference::SignatureTag(op, dtypes) + "." + def.name;
          CaseBuilder builder(HashName(name));
          OpCase c = def.build(builder);
          ASSERT_EQ(c.args.size(), dtypes.size()) << name;
          for (size_t i = 0; i < dtypes.size(); ++i) {
            ASSERT_EQ(c.args[i].dtype, dtypes[i]) << name << " arg " << i;
          }
          auto layout = LayOut(c, 1);
          ASSERT_TRUE(layout.ok()) << name << ": " << layout.status().message();
          auto ref = RunReference(op, c, *layout);
          ASSERT_TRUE(ref.ok()) << name << ": " << ref.status().message();
          // The reference agrees with itself.
          std::vector<Image> want = *ref, got = *ref;
          Outcome o = CompareImages(op, c, *layout, want, got);
          EXPECT_EQ(o.status, CheckStatus::kPass) << name << ": " << o.message;
          ++count;
        }
      }
    }
  }
  EXPECT_GT(count, 400);
}

TEST(OpCasesTest, EveryDecoderLayerCaseRunsOnTheReference) {
  int count = 0;
  for (const auto& classes :
       reference::AllowedSignatures(TSR_OP_DECODER_LAYER, 1)) {
    for (const CaseDef& def : MakeOpCases(TSR_OP_DECODER_LAYER, classes, 1)) {
      const std::string name =
          "decoder_layer." +
          reference::SignatureTag(TSR_OP_DECODER_LAYER, classes) + "." +
          def.name;
      CaseBuilder builder(HashName(name));
      OpCase c = def.build(builder);
      ASSERT_EQ(c.args.size(), size_t{TSR_DECODER_LAYER_NUM_INPUTS +
                                      TSR_DECODER_LAYER_NUM_OUTPUTS})
          << name;
      auto layout = LayOut(c, 1);
      ASSERT_TRUE(layout.ok()) << name << ": " << layout.status().message();
      auto ref = RunReference(TSR_OP_DECODER_LAYER, c, *layout);
      ASSERT_TRUE(ref.ok()) << name << ": " << ref.status().message();
      // The layer changed residual_out and the new tokens' cache rows.
      std::vector<Image> before = layout->initial, after = *ref;
      Outcome o = CompareImages(TSR_OP_DECODER_LAYER, c, *layout, after,
                                before);
      EXPECT_EQ(o.status, CheckStatus::kFail) << name;
      ++count;
    }
  }
  EXPECT_EQ(count, 12 * 3);  // (X, W, KV) triples x cases
}

// Runs rms_norm f32 "basic" and returns (case, layout, reference images).
struct Basic {
  OpCase c;
  CaseLayout layout;
  std::vector<Image> ref;
};
Basic RmsNormBasic() {
  std::vector<DType> sig = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32};
  Basic b;
  for (const CaseDef& d : MakeOpCases(TSR_OP_RMS_NORM, sig)) {
    if (d.name == "strided") {
      CaseBuilder builder(1);
      b.c = d.build(builder);
    }
  }
  b.layout = *LayOut(b.c, 2);
  b.ref = *RunReference(TSR_OP_RMS_NORM, b.c, b.layout);
  return b;
}

TEST(OpHarnessTest, CatchesAWrongElement) {
  Basic b = RmsNormBasic();
  std::vector<Image> got = b.ref;
  // Element (1, 3) of y: offset 5 + 1 * (33 + 2) + 3 elements.
  float* y = reinterpret_cast<float*>(got[2].data());
  y[5 + 35 + 3] += 0.01f;
  Outcome o = CompareImages(TSR_OP_RMS_NORM, b.c, b.layout, b.ref, got);
  EXPECT_EQ(o.status, CheckStatus::kFail);
  EXPECT_NE(o.message.find("y: abs err"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("at index 36 [1, 3]"), std::string::npos)
      << o.message;
}

TEST(OpHarnessTest, CatchesWritesOutsideTheView) {
  Basic b = RmsNormBasic();
  std::vector<Image> got = b.ref;
  float* y = reinterpret_cast<float*>(got[2].data());
  y[5 + 33] = 1.0f;  // the padding after row 0
  Outcome o = CompareImages(TSR_OP_RMS_NORM, b.c, b.layout, b.ref, got);
  EXPECT_EQ(o.status, CheckStatus::kFail);
  EXPECT_NE(o.message.find("wrote outside"), std::string::npos) << o.message;
  // And a modified input.
  got = b.ref;
  got[0][0] ^= 1;  // x's buffer, before its view
  o = CompareImages(TSR_OP_RMS_NORM, b.c, b.layout, b.ref, got);
  EXPECT_EQ(o.status, CheckStatus::kFail);
}

TEST(OpHarnessTest, SampleAcceptsOnlyTheReferenceIds) {
  std::vector<DType> sig = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_I32,
                            TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32,
                            TSR_DTYPE_I32};
  for (const CaseDef& d : MakeOpCases(TSR_OP_SAMPLE, sig)) {
    if (d.name != "combined") continue;
    CaseBuilder builder(3);
    OpCase c = d.build(builder);
    CaseLayout layout = *LayOut(c, 4);
    std::vector<Image> ref = *RunReference(TSR_OP_SAMPLE, c, layout);
    std::vector<Image> got = ref;
    EXPECT_EQ(CompareImages(TSR_OP_SAMPLE, c, layout, ref, got).status,
              CheckStatus::kPass);
    int32_t* ids = reinterpret_cast<int32_t*>(got[6].data());
    ids[0] = (ids[0] + 500) % 1000;  // an unlikely id
    Outcome o = CompareImages(TSR_OP_SAMPLE, c, layout, ref, got);
    EXPECT_EQ(o.status, CheckStatus::kFail);
    EXPECT_NE(o.message.find("row 0 sampled"), std::string::npos) << o.message;
  }
}

TEST(PluginCheckTest, ParsesInitOptions) {
  auto o = ParseInitOptions(" threads=4, devices = 2");
  ASSERT_TRUE(o.ok());
  ASSERT_EQ(o->size(), 2u);
  EXPECT_EQ((*o)[0], std::make_pair(std::string("threads"), std::string("4")));
  EXPECT_EQ((*o)[1], std::make_pair(std::string("devices"), std::string("2")));
  EXPECT_TRUE(ParseInitOptions("")->empty());
  EXPECT_FALSE(ParseInitOptions("threads").ok());
}

TEST(PluginCheckTest, MissingFileFailsWithTheMessage) {
  PluginCheckOptions options;
  options.path = "/nonexistent/libtsr_nothing.so";
  char* buffer = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&buffer, &size);
  int rc = RunPluginCheck(options, out);
  std::fclose(out);
  std::string text(buffer, size);
  free(buffer);
  EXPECT_EQ(rc, kExitFailed);
  EXPECT_NE(
      text.find(
          "[FAIL] load: plugin file /nonexistent/libtsr_nothing.so not found"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("0 passed, 1 failed, 0 skipped"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace tessera::conformance
