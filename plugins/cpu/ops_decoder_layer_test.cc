// decoder_layer (fused, ABI 1.2) on the cpu plugin: what a launch rejects
// and how a failing step is reported. Its numerics are checked against
// reference/ by plugin-check (op.decoder_layer.*) on every kernel path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kT = 2, kH = 16, kHq = 2, kHk = 1, kD = 8, kI = 12, kSlots = 8;

class DecoderLayerTest : public CpuPluginTest {
 protected:
  void SetUp() override {
    CpuPluginTest::SetUp();
    Init();
    const int64_t nqkv = (kHq + 2 * kHk) * kD;
    in_ = {Zeros(TSR_DTYPE_F32, {kT, kH}, {}, 0.5),       // residual
           Make(TSR_DTYPE_I32, {kT}, {0, 1}),             // positions
           Make(TSR_DTYPE_I32, {kT}, {0, 1}),             // slots
           Make(TSR_DTYPE_I32, {1, 1}, {0}),              // block_table
           Make(TSR_DTYPE_I32, {1}, {2}),                 // seq_lens
           Make(TSR_DTYPE_I32, {2}, {0, 2}),              // query_start
           Zeros(TSR_DTYPE_F32, {kD / 2}, {}, 0.5),       // inv_freq
           Zeros(TSR_DTYPE_F32, {kH}, {}, 1.0),           // input_norm
           Zeros(TSR_DTYPE_F32, {nqkv, kH}, {}, 0.1),     // w_qkv
           Absent(),                                      // w_qkv_scale
           Absent(),                                      // qkv_bias
           Absent(),                                      // q_norm
           Absent(),                                      // k_norm
           Zeros(TSR_DTYPE_F32, {kH, kHq * kD}, {}, 0.1), // w_o
           Absent(),                                      // w_o_scale
           Absent(),                                      // o_bias
           Zeros(TSR_DTYPE_F32, {kH}, {}, 1.0),           // post_norm
           Zeros(TSR_DTYPE_F32, {2 * kI, kH}, {}, 0.1),   // w_gate_up
           Absent(),                                      // w_gate_up_scale
           Zeros(TSR_DTYPE_F32, {kH, kI}, {}, 0.1),       // w_down
           Absent()};                                     // w_down_scale
    out_ = {Zeros(TSR_DTYPE_F32, {kT, kH}), Zeros(TSR_DTYPE_F32, {kSlots, kHk, kD}),
            Zeros(TSR_DTYPE_F32, {kSlots, kHk, kD})};
    params_.struct_size = sizeof(params_);
    params_.rms_norm_eps = 1e-6f;
    params_.rope_style = TSR_ROPE_NEOX;
    params_.num_q_heads = kHq;
    params_.num_kv_heads = kHk;
    params_.head_dim = kD;
    params_.attn_scale = 0.35f;
    params_.page_size = kSlots;
    kernel_ = Resolve(TSR_OP_DECODER_LAYER, {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32});
  }

  static DeviceTensor Absent() {
    DeviceTensor t;
    t.desc.struct_size = sizeof(tsr_tensor);
    t.desc.dtype = TSR_DTYPE_INVALID;
    return t;
  }

  // Launches with the current tensors; synchronises when it was accepted.
  tsr_status Launch() {
    std::vector<tsr_tensor> ins, outs;
    for (const auto& t : in_) ins.push_back(t.desc);
    for (const auto& t : out_) outs.push_back(t.desc);
    tsr_status s = api_->launch(kernel_, stream_, ins.data(), ins.size(), outs.data(),
                                outs.size(), &params_, sizeof(params_));
    return s != TSR_OK ? s : api_->stream_synchronize(stream_);
  }

  std::vector<DeviceTensor> in_, out_;
  tsr_decoder_layer_params params_{};
  tsr_kernel kernel_ = nullptr;
};

TEST_F(DecoderLayerTest, ListedWithTheFusedCapability) {
  EXPECT_NE(lib_->api().manifest->capabilities & TSR_CAP_FUSED_OPS, 0u);
  ASSERT_NE(kernel_, nullptr);
  ASSERT_EQ(Launch(), TSR_OK) << api_->last_error();
  // The layer wrote both tokens' K rows (slots 0 and 1) and a new residual.
  const std::vector<double> k = Read(out_[1]);
  EXPECT_NE(k[0], 0.0);
  EXPECT_NE(k[kD], 0.0);
  EXPECT_EQ(k[2 * kD], 0.0);  // slot 2 untouched
  EXPECT_NE(Read(out_[0])[0], 0.0);
}

TEST_F(DecoderLayerTest, RejectsAnAbsentRequiredTensor) {
  in_[13] = Absent();  // w_o
  EXPECT_EQ(Launch(), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("w_o"));
  EXPECT_THAT(api_->last_error(), HasSubstr("absent"));
}

TEST_F(DecoderLayerTest, RejectsScalesWithFloatWeights) {
  in_[9] = Zeros(TSR_DTYPE_F32, {(kHq + 2 * kHk) * kD, 1});
  EXPECT_EQ(Launch(), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("w_qkv_scale"));
  EXPECT_THAT(api_->last_error(), HasSubstr("must be absent"));
}

TEST_F(DecoderLayerTest, RejectsAQNormWithoutAKNorm) {
  in_[11] = Zeros(TSR_DTYPE_F32, {kD}, {}, 1.0);
  EXPECT_EQ(Launch(), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("q_norm and k_norm"));
}

TEST_F(DecoderLayerTest, NamesTheStepWhoseShapesDisagree) {
  in_[1] = Make(TSR_DTYPE_I32, {kT + 1}, {0, 1, 2});  // positions: T + 1
  EXPECT_EQ(Launch(), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("step rope"));
  in_[1] = Make(TSR_DTYPE_I32, {kT}, {0, 1});
  params_.num_q_heads = 4;  // w_qkv no longer (Hq + 2 Hk) D rows
  EXPECT_EQ(Launch(), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("w_qkv"));
}

TEST_F(DecoderLayerTest, AFailingStepIsTheStreamsStickyError) {
  in_[2] = Make(TSR_DTYPE_I32, {kT}, {0, kSlots + 5});  // a slot outside the pool
  EXPECT_EQ(Launch(), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("decoder_layer step kv_store"));
}

}  // namespace
}  // namespace tessera::cpu::testing
