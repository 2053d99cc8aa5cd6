// OpDispatcher: native launches, cached resolution, and the cpu fallback
// path, with the minimal example plugin as the selected plugin (it has only
// add and cast) and the real cpu plugin for fallback.
#include "runtime/op_dispatcher.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/runtime.h"
#include "runtime/test_util.h"

namespace tessera::runtime {
namespace {

using testing::LogCapture;
using testing::ScopedCleanEnv;

// Host reference: y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w, rows of H.
std::vector<float> RmsNormReference(const std::vector<float>& x,
                                    const std::vector<float>& w, float eps) {
  const size_t h = w.size();
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / h; ++r) {
    double sum = 0;
    for (size_t i = 0; i < h; ++i) sum += double(x[r * h + i]) * x[r * h + i];
    double scale = 1.0 / std::sqrt(sum / h + eps);
    for (size_t i = 0; i < h; ++i) {
      y[r * h + i] = float(x[r * h + i] * scale * w[i]);
    }
  }
  return y;
}

class OpDispatcherTest : public ::testing::Test {
 protected:
  // Selects `plugin_path` (empty: automatic) under the current environment.
  void Start(const std::string& plugin_path) {
    RuntimeFlags flags;
    flags.device_plugin = plugin_path;
    auto config = RuntimeConfig::FromEnvironment(flags);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto runtime = Runtime::Create(*config);
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    runtime_ = std::move(runtime).value();
    ASSERT_GE(runtime_->num_devices(), 1);
    auto stream = runtime_->device(0).CreateStream();
    ASSERT_TRUE(stream.ok());
    stream_ = std::move(stream).value();
  }
  void StartMinimal() { Start(testing::MinimalPluginPath()); }
  void TearDown() override {
    stream_.reset();
    runtime_.reset();
  }

  BufferPtr Upload(const std::vector<float>& values) {
    auto buffer = runtime_->device(0).Allocate(values.size() * 4);
    EXPECT_TRUE(buffer.ok());
    EXPECT_TRUE(
        (*buffer)->CopyFromHost(0, values.data(), values.size() * 4).ok());
    return std::move(buffer).value();
  }
  std::vector<float> Download(const Buffer& buffer, size_t count,
                              uint64_t offset = 0) {
    std::vector<float> out(count);
    EXPECT_TRUE(stream_->Synchronize().ok());
    EXPECT_TRUE(buffer.CopyToHost(out.data(), offset, count * 4).ok());
    return out;
  }
  OpDispatcher& dispatcher() { return runtime_->dispatcher(); }

  ScopedCleanEnv env_;
  std::unique_ptr<Runtime> runtime_;
  StreamPtr stream_;
};

TEST_F(OpDispatcherTest, AddRunsNatively) {
  StartMinimal();
  auto a = Upload({1, 2, 3, 4, 5, 6});
  auto b = Upload({10, 20, 30, 40, 50, 60});
  auto y = Upload(std::vector<float>(6, 0));
  tsr_tensor in[] = {a->View(TSR_DTYPE_F32, {2, 3}),
                     b->View(TSR_DTYPE_F32, {2, 3})};
  tsr_tensor out[] = {y->View(TSR_DTYPE_F32, {2, 3})};
  ASSERT_TRUE(dispatcher().Launch(*stream_, TSR_OP_ADD, in, out).ok());
  EXPECT_EQ(Download(*y, 6), (std::vector<float>{11, 22, 33, 44, 55, 66}));
  auto counters = dispatcher().Counters();
  ASSERT_EQ(counters.size(), 1u);
  EXPECT_EQ(counters[0].op, "add");
  EXPECT_EQ(counters[0].plugin, "minimal");
  EXPECT_EQ(counters[0].launches, 1u);
  EXPECT_EQ(counters[0].fallbacks, 0u);
  EXPECT_EQ(dispatcher().Coverage(TSR_OP_ADD), OpRoute::kNative);
  EXPECT_EQ(dispatcher().Coverage(TSR_OP_CAST), OpRoute::kNative);
  EXPECT_EQ(dispatcher().Coverage(TSR_OP_LINEAR), OpRoute::kFallback);
}

TEST_F(OpDispatcherTest, ResolutionIsCachedPerSignature) {
  StartMinimal();
  tsr_dtype f32x3[] = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32};
  auto first = dispatcher().Resolve(0, MakeSignature(TSR_OP_ADD, 1, f32x3));
  auto again = dispatcher().Resolve(0, MakeSignature(TSR_OP_ADD, 1, f32x3));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(*first, *again);
  EXPECT_EQ((*first)->route, OpRoute::kNative);
  EXPECT_EQ((*first)->runner, &runtime_->plugin());
  auto norm = dispatcher().Resolve(0, MakeSignature(TSR_OP_RMS_NORM, 1, f32x3));
  ASSERT_TRUE(norm.ok());
  EXPECT_NE(*norm, *first);
  EXPECT_EQ((*norm)->route, OpRoute::kFallback);
  EXPECT_EQ((*norm)->runner, &runtime_->cpu_plugin());
  EXPECT_EQ((*norm)->reason, "not implemented");
}

TEST_F(OpDispatcherTest, RmsNormFallsBackToCpuWithOneWarning) {
  StartMinimal();
  LogCapture log(spdlog::level::warn);
  std::vector<float> x = {1, -2, 3, 0.5f, 4, 4, -1, 2};
  std::vector<float> w = {1, 0.5f, 2, -1};
  auto xb = Upload(x);
  auto wb = Upload(w);
  auto yb = Upload(std::vector<float>(8, 0));
  tsr_rms_norm_params params{sizeof(tsr_rms_norm_params), 1e-5f};
  tsr_tensor in[] = {xb->View(TSR_DTYPE_F32, {2, 4}),
                     wb->View(TSR_DTYPE_F32, {4})};
  tsr_tensor out[] = {yb->View(TSR_DTYPE_F32, {2, 4})};
  uint64_t cpu_allocations = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        dispatcher()
            .Launch(*stream_, TSR_OP_RMS_NORM, in, out, &params, sizeof(params))
            .ok());
    uint64_t now = runtime_->cpu_plugin()
                       .accounting()
                       .Get(0, TSR_MEM_DEVICE)
                       .plugin_allocations;
    // The fallback's cpu buffers come from a pool: only the first launch
    // allocates from the cpu plugin.
    if (i == 0) {
      EXPECT_GT(now, 0u);
      cpu_allocations = now;
    } else {
      EXPECT_EQ(now, cpu_allocations);
    }
  }
  std::vector<float> got = Download(*yb, 8);
  std::vector<float> want = RmsNormReference(x, w, 1e-5f);
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;

  EXPECT_EQ(dispatcher().FallbackCount(TSR_OP_RMS_NORM), 3u);
  EXPECT_EQ(log.CountLines({"rms_norm", "minimal", "falls back"}), 1)
      << log.text();
  bool saw_minimal = false, saw_cpu = false;
  for (const OpCounter& c : dispatcher().Counters()) {
    if (c.op != "rms_norm") continue;
    if (c.plugin == "minimal") {
      saw_minimal = true;
      EXPECT_EQ(c.fallbacks, 3u);
      EXPECT_EQ(c.launches, 0u);
    }
    if (c.plugin == "cpu") {
      saw_cpu = true;
      EXPECT_EQ(c.launches, 3u);
    }
  }
  EXPECT_TRUE(saw_minimal && saw_cpu);
}

TEST_F(OpDispatcherTest, FallbackHonoursOffsetsStridesAndSharedBuffers) {
  StartMinimal();
  // One buffer holds x as 3 rows of 4 with a row pitch of 6 floats starting
  // at float 2, and w (4 floats) at float 24. y is written into a buffer
  // pre-filled with a sentinel, at the same strided layout: the gaps must
  // keep the sentinel.
  const float kSentinel = -777.0f;
  std::vector<float> packed(28, kSentinel);
  std::vector<float> x(12), w = {0.5f, 1, 1.5f, 2};
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 4; ++c) {
      x[r * 4 + c] = float(r * 4 + c + 1) * (c % 2 ? -1.0f : 1.0f);
      packed[2 + r * 6 + c] = x[r * 4 + c];
    }
  }
  for (int c = 0; c < 4; ++c) packed[24 + c] = w[c];
  auto data = Upload(packed);
  auto yb = Upload(std::vector<float>(28, kSentinel));

  tsr_tensor xt = data->View(TSR_DTYPE_F32, {3, 4}, 2 * 4);
  xt.strides[0] = 6;
  tsr_tensor wt = data->View(TSR_DTYPE_F32, {4}, 24 * 4);
  tsr_tensor yt = yb->View(TSR_DTYPE_F32, {3, 4}, 2 * 4);
  yt.strides[0] = 6;
  tsr_rms_norm_params params{sizeof(params), 1e-6f};
  tsr_tensor in[] = {xt, wt};
  tsr_tensor out[] = {yt};
  Status s = dispatcher().Launch(*stream_, TSR_OP_RMS_NORM, in, out, &params,
                                 sizeof(params));
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<float> want = RmsNormReference(x, w, 1e-6f);
  std::vector<float> got = Download(*yb, 28);
  for (int i = 0; i < 28; ++i) {
    int rel = i - 2;
    bool inside = rel >= 0 && rel / 6 < 3 && rel % 6 < 4;
    if (inside) {
      EXPECT_NEAR(got[i], want[(rel / 6) * 4 + rel % 6], 1e-5) << i;
    } else {
      EXPECT_EQ(got[i], kSentinel) << "byte gap " << i << " was overwritten";
    }
  }
  // The input buffer is untouched.
  EXPECT_EQ(Download(*data, 28), packed);
}

TEST_F(OpDispatcherTest, FallbackPreservesExactAliasing) {
  StartMinimal();
  std::vector<float> x = {3, 4, -1, 1};
  std::vector<float> w = {1, 1};
  auto xb = Upload(x);
  auto wb = Upload(w);
  tsr_rms_norm_params params{sizeof(params), 0.0f};
  tsr_tensor in[] = {xb->View(TSR_DTYPE_F32, {2, 2}),
                     wb->View(TSR_DTYPE_F32, {2})};
  tsr_tensor out[] = {xb->View(TSR_DTYPE_F32, {2, 2})};  // y aliases x
  ASSERT_TRUE(
      dispatcher()
          .Launch(*stream_, TSR_OP_RMS_NORM, in, out, &params, sizeof(params))
          .ok());
  std::vector<float> want = RmsNormReference(x, w, 0.0f);
  std::vector<float> got = Download(*xb, 4);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST_F(OpDispatcherTest, LinearFallbackMatchesHost) {
  StartMinimal();
  // x [2, 3], w [4, 3] (row-major, Hugging Face layout), bias [4].
  std::vector<float> x = {1, 2, 3, -1, 0.5f, 2};
  std::vector<float> w = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
  std::vector<float> bias = {0.5f, -0.5f, 1, 0};
  auto xb = Upload(x), wb = Upload(w), bb = Upload(bias);
  auto yb = Upload(std::vector<float>(8, 0));
  tsr_tensor in[] = {xb->View(TSR_DTYPE_F32, {2, 3}),
                     wb->View(TSR_DTYPE_F32, {4, 3}),
                     bb->View(TSR_DTYPE_F32, {4})};
  tsr_tensor out[] = {yb->View(TSR_DTYPE_F32, {2, 4})};
  Status s = dispatcher().Launch(*stream_, TSR_OP_LINEAR, in, out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<float> got = Download(*yb, 8);
  for (int t = 0; t < 2; ++t) {
    for (int n = 0; n < 4; ++n) {
      float want = bias[n];
      for (int k = 0; k < 3; ++k) want += x[t * 3 + k] * w[n * 3 + k];
      EXPECT_NEAR(got[t * 4 + n], want, 1e-5) << t << "," << n;
    }
  }
}

TEST_F(OpDispatcherTest, FallbackErrorDoesNotPoisonLaterFallbacks) {
  StartMinimal();
  // embedding: ids I32 [2], table F32 [2, 3] -> y F32 [2, 3]. An id outside
  // [0, 2) is a sticky stream error on the cpu plugin.
  auto table = Upload({1, 2, 3, 4, 5, 6});
  auto y = Upload(std::vector<float>(6, 0));
  auto ids = runtime_->device(0).Allocate(8);
  ASSERT_TRUE(ids.ok());
  int32_t bad_ids[] = {0, 5};
  ASSERT_TRUE((*ids)->CopyFromHost(0, bad_ids, 8).ok());
  tsr_tensor in[] = {(*ids)->View(TSR_DTYPE_I32, {2}),
                     table->View(TSR_DTYPE_F32, {2, 3})};
  tsr_tensor out[] = {y->View(TSR_DTYPE_F32, {2, 3})};
  Status s = dispatcher().Launch(*stream_, TSR_OP_EMBEDDING, in, out);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cpu fallback of embedding"), std::string::npos)
      << s.message();
  int32_t good_ids[] = {1, 0};
  ASSERT_TRUE((*ids)->CopyFromHost(0, good_ids, 8).ok());
  s = dispatcher().Launch(*stream_, TSR_OP_EMBEDDING, in, out);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Download(*y, 6), (std::vector<float>{4, 5, 6, 1, 2, 3}));
}

TEST_F(OpDispatcherTest, DisabledOpFallsBack) {
  env_.Set("TESSERA_DISABLE_OPS", "add");
  StartMinimal();
  EXPECT_EQ(dispatcher().Coverage(TSR_OP_ADD), OpRoute::kFallback);
  EXPECT_TRUE(dispatcher().IsDisabled(TSR_OP_ADD));
  auto a = Upload({1, 2});
  auto y = Upload({0, 0});
  tsr_tensor in[] = {a->View(TSR_DTYPE_F32, {2}), a->View(TSR_DTYPE_F32, {2})};
  tsr_tensor out[] = {y->View(TSR_DTYPE_F32, {2})};
  ASSERT_TRUE(dispatcher().Launch(*stream_, TSR_OP_ADD, in, out).ok());
  EXPECT_EQ(Download(*y, 2), (std::vector<float>{2, 4}));
  EXPECT_EQ(dispatcher().FallbackCount(TSR_OP_ADD), 1u);
  tsr_dtype f32x3[] = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32};
  auto resolved = dispatcher().Resolve(0, MakeSignature(TSR_OP_ADD, 1, f32x3));
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ((*resolved)->reason, "disabled by TESSERA_DISABLE_OPS");
}

TEST_F(OpDispatcherTest, DisabledOpOnCpuRunsInPlaceAndCounts) {
  env_.Set("TESSERA_DISABLE_OPS", "rms_norm");
  Start("");  // the cpu plugin, chosen by score
  ASSERT_TRUE(runtime_->cpu_is_selected());
  EXPECT_EQ(dispatcher().Coverage(TSR_OP_RMS_NORM), OpRoute::kFallback);
  EXPECT_EQ(dispatcher().Coverage(TSR_OP_LINEAR), OpRoute::kNative);
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> w = {1, 1};
  auto xb = Upload(x), wb = Upload(w);
  auto yb = Upload(std::vector<float>(4, 0));
  tsr_rms_norm_params params{sizeof(params), 1e-5f};
  tsr_tensor in[] = {xb->View(TSR_DTYPE_F32, {2, 2}),
                     wb->View(TSR_DTYPE_F32, {2})};
  tsr_tensor out[] = {yb->View(TSR_DTYPE_F32, {2, 2})};
  ASSERT_TRUE(
      dispatcher()
          .Launch(*stream_, TSR_OP_RMS_NORM, in, out, &params, sizeof(params))
          .ok());
  std::vector<float> want = RmsNormReference(x, w, 1e-5f);
  std::vector<float> got = Download(*yb, 4);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
  EXPECT_EQ(dispatcher().FallbackCount(TSR_OP_RMS_NORM), 1u);
}

TEST_F(OpDispatcherTest, SignatureNobodyHasIsUnimplemented) {
  StartMinimal();
  tsr_dtype i64x3[] = {TSR_DTYPE_I64, TSR_DTYPE_I64, TSR_DTYPE_I64};
  auto r = dispatcher().Resolve(0, MakeSignature(TSR_OP_ADD, 1, i64x3));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("minimal"), std::string::npos);
  EXPECT_NE(r.status().message().find("cpu"), std::string::npos);
  EXPECT_NE(r.status().message().find("add v1 (i64, i64, i64)"),
            std::string::npos)
      << r.status().message();
}

TEST_F(OpDispatcherTest, LogOpsLogsEveryResolution) {
  env_.Set("TESSERA_LOG_OPS", "1");
  StartMinimal();
  LogCapture log(spdlog::level::info);
  tsr_dtype f32x3[] = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32};
  ASSERT_TRUE(
      dispatcher().Resolve(0, MakeSignature(TSR_OP_ADD, 1, f32x3)).ok());
  ASSERT_TRUE(
      dispatcher().Resolve(0, MakeSignature(TSR_OP_RMS_NORM, 1, f32x3)).ok());
  EXPECT_EQ(log.CountLines({"op add v1", "minimal device 0: native"}), 1)
      << log.text();
  EXPECT_EQ(log.CountLines({"op rms_norm v1", "fallback to cpu device 0"}), 1)
      << log.text();
}

TEST_F(OpDispatcherTest, RejectsAStreamOfAnotherDevice) {
  env_.Set("TESSERA_PLUGIN_OPTIONS", "devices=2");
  StartMinimal();
  ASSERT_EQ(runtime_->num_devices(), 2);
  auto other = runtime_->device(1).CreateStream();
  ASSERT_TRUE(other.ok());
  tsr_dtype f32x3[] = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32};
  auto add = dispatcher().Resolve(0, MakeSignature(TSR_OP_ADD, 1, f32x3));
  ASSERT_TRUE(add.ok());
  auto a = Upload({1});
  tsr_tensor in[] = {a->View(TSR_DTYPE_F32, {1}), a->View(TSR_DTYPE_F32, {1})};
  Status s = dispatcher().Launch(**add, **other, in, in);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

// decoder_layer (fused, ABI 1.2): native on the cpu plugin, never a
// fallback — a plugin without it (or with it disabled) gets NotFound with
// the reason, and the caller runs the op sequence instead.
TEST_F(OpDispatcherTest, FusedOpsResolveNativelyOrNotAtAll) {
  tsr_dtype classes[] = {TSR_DTYPE_BF16, TSR_DTYPE_I8, TSR_DTYPE_F32};
  const tsr_op_signature sig = MakeSignature(TSR_OP_DECODER_LAYER, 1, classes);
  Start("");  // the cpu plugin
  ASSERT_TRUE(runtime_->cpu_is_selected());
  auto native = dispatcher().ResolveFused(0, sig);
  ASSERT_TRUE(native.ok()) << native.status().ToString();
  EXPECT_EQ((*native)->route, OpRoute::kNative);
  auto again = dispatcher().ResolveFused(0, sig);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *native);  // cached

  TearDown();
  StartMinimal();  // lists add and cast only
  auto absent = dispatcher().ResolveFused(0, sig);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
  EXPECT_NE(absent.status().message().find("not offered"), std::string::npos)
      << absent.status().message();
  EXPECT_EQ(dispatcher().FallbackCount(TSR_OP_DECODER_LAYER), 0u);

  TearDown();
  env_.Set("TESSERA_DISABLE_OPS", "decoder_layer");
  Start("");
  auto disabled = dispatcher().ResolveFused(0, sig);
  ASSERT_FALSE(disabled.ok());
  EXPECT_NE(disabled.status().message().find("TESSERA_DISABLE_OPS"),
            std::string::npos)
      << disabled.status().message();
}

}  // namespace
}  // namespace tessera::runtime
