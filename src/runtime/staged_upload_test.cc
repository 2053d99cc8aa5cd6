// StagedUpload on the real cpu plugin, whose streams are worker threads:
// every upload is seen, in order, by the compute stream's later work, with a
// separate copy stream and with one stream; staging survives reuse and
// growth.
#include "runtime/staged_upload.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "runtime/runtime.h"
#include "runtime/test_util.h"

namespace tessera::runtime {
namespace {

class StagedUploadTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    auto config = RuntimeConfig::FromEnvironment({});
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto runtime = Runtime::Create(*config);
    ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
    runtime_ = std::move(runtime).value();
    ASSERT_EQ(runtime_->plugin().name(), "cpu");
  }

  testing::ScopedCleanEnv env_;
  std::unique_ptr<Runtime> runtime_;
};

// Step i uploads n_i int32 values (i * 1000 + j) into `dst`, then the
// compute stream copies dst into row i of `out`, as a step reads its
// metadata. The copy stream runs ahead: a wrong order or a staging buffer
// overwritten too early shows as a wrong row.
TEST_P(StagedUploadTest, ComputeSeesEveryUploadInOrder) {
  const bool separate = GetParam();
  Device& device = runtime_->device(0);
  auto compute = device.CreateStream();
  ASSERT_TRUE(compute.ok());
  StreamPtr copy_owner;
  if (separate) {
    auto copy = device.CreateStream();
    ASSERT_TRUE(copy.ok());
    copy_owner = std::move(copy).value();
  }
  Stream& copy = separate ? *copy_owner : **compute;
  constexpr int kSteps = 64;
  constexpr int64_t kMaxValues = 3000;  // grows past the first stages
  auto dst = device.Allocate(kMaxValues * 4);
  auto out = device.Allocate(kSteps * kMaxValues * 4);
  ASSERT_TRUE(dst.ok() && out.ok());
  {
    StagedUpload upload(device, **compute, copy);
    EXPECT_EQ(upload.separate_copy_stream(), separate);
    for (int i = 0; i < kSteps; ++i) {
      const int64_t n = 1 + (i * 97) % kMaxValues;
      auto host = upload.Host<int32_t>(static_cast<size_t>(n));
      ASSERT_TRUE(host.ok()) << host.status().ToString();
      for (int64_t j = 0; j < n; ++j) (*host)[j] = static_cast<int32_t>(i * 1000 + j);
      ASSERT_TRUE(upload.Commit(**dst, 0).ok());
      ASSERT_TRUE((*compute)->CopyDeviceToDevice(**out, uint64_t(i) * kMaxValues * 4,
                                                 **dst, 0, uint64_t(n) * 4)
                      .ok());
    }
  }  // the destructor synchronises both streams
  std::vector<int32_t> got(size_t(kSteps * kMaxValues));
  ASSERT_TRUE((*compute)->CopyDeviceToHost(got.data(), **out, 0, got.size() * 4).ok());
  ASSERT_TRUE((*compute)->Synchronize().ok());
  for (int i = 0; i < kSteps; ++i) {
    const int64_t n = 1 + (i * 97) % kMaxValues;
    for (int64_t j = 0; j < n; ++j) {
      ASSERT_EQ(got[size_t(i * kMaxValues + j)], i * 1000 + j) << "step " << i;
    }
  }
}

TEST_P(StagedUploadTest, CommitWithoutHostIsRefused) {
  Device& device = runtime_->device(0);
  auto compute = device.CreateStream();
  ASSERT_TRUE(compute.ok());
  StagedUpload upload(device, **compute, **compute);
  auto dst = device.Allocate(64);
  ASSERT_TRUE(dst.ok());
  EXPECT_EQ(upload.Commit(**dst, 0).code(), StatusCode::kFailedPrecondition);
}

INSTANTIATE_TEST_SUITE_P(CopyStream, StagedUploadTest, ::testing::Bool(),
                         [](const auto& info) {
                           return info.param ? "Separate" : "SameStream";
                         });

}  // namespace
}  // namespace tessera::runtime
