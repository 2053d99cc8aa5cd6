// HostKvPool layouts and KvTransfer on the real runtime (the cpu plugin):
// pages backed up from the device and loaded back elsewhere arrive intact,
// in both host layouts.
#include "kv/host_kv_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kv/kv_transfer.h"
#include "runtime/runtime.h"

namespace tessera::kv {
namespace {

class HostKvPoolTest : public ::testing::TestWithParam<HostLayout> {
 protected:
  void SetUp() override {
    auto config = runtime::RuntimeConfig::FromEnvironment();
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto rt = runtime::Runtime::Create(*config);
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
    KvPoolOptions o;
    o.num_layers = 2;
    o.num_kv_heads = 3;
    o.head_dim = 4;
    o.dtype = TSR_DTYPE_F32;
    o.page_size = 2;
    o.capacity_tokens = 16;  // 8 pages (+ the scratch page)
    auto pool = KvPool::Create(device(), o);
    ASSERT_TRUE(pool.ok()) << pool.status().ToString();
    pool_ = std::move(pool).value();
    // Every float of every slab gets a distinct value.
    for (int64_t l = 0; l < o.num_layers; ++l) {
      for (int kv = 0; kv < 2; ++kv) {
        runtime::Buffer& b = kv == 0 ? pool_->k_buffer(l) : pool_->v_buffer(l);
        std::vector<float> v(b.size() / sizeof(float));
        for (size_t i = 0; i < v.size(); ++i) {
          v[i] = static_cast<float>((l * 2 + kv) * 100000 + static_cast<int64_t>(i));
        }
        ASSERT_TRUE(b.CopyFromHost(0, v.data(), b.size()).ok());
      }
    }
  }
  runtime::Device& device() { return runtime_->device(0); }

  // The floats of device page `page`, segment order (layer, kv, head).
  std::vector<float> DevicePage(int32_t page) {
    std::vector<float> out;
    const int64_t d = 4, ps = 2;
    for (int64_t l = 0; l < 2; ++l) {
      for (int kv = 0; kv < 2; ++kv) {
        runtime::Buffer& b = kv == 0 ? pool_->k_buffer(l) : pool_->v_buffer(l);
        std::vector<float> v(b.size() / sizeof(float));
        EXPECT_TRUE(b.CopyToHost(v.data(), 0, b.size()).ok());
        for (int64_t h = 0; h < 3; ++h) {
          const int64_t at = (h * pool_->slab_slots() + page * ps) * d;
          out.insert(out.end(), v.begin() + at, v.begin() + at + ps * d);
        }
      }
    }
    return out;
  }

  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<KvPool> pool_;
};

TEST_P(HostKvPoolTest, BackupThenLoadMovesPagesIntact) {
  auto host = HostKvPool::Create(device(), *pool_, 6, GetParam());
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ((*host)->page_bytes(), KvPool::BytesPerPage(pool_->options()));
  auto transfer = KvTransfer::Create(device(), *pool_, **host);
  ASSERT_TRUE(transfer.ok()) << transfer.status().ToString();
  const std::vector<float> p3 = DevicePage(3), p4 = DevicePage(4),
                           p5 = DevicePage(5);
  // Device pages 3, 4, 5 -> host 1, 2, 0 (a run on both sides, then not).
  const uint64_t b = (*transfer)->Submit(TransferDirection::kBackup,
                                         {{3, 1}, {4, 2}, {5, 0}});
  (*transfer)->WaitIdle(TransferDirection::kBackup);
  // Host 1, 2, 0 -> device pages 6, 7, 0.
  const uint64_t l = (*transfer)->Submit(TransferDirection::kLoad,
                                         {{6, 1}, {7, 2}, {0, 0}});
  (*transfer)->WaitIdle(TransferDirection::kLoad);
  auto done = (*transfer)->PollDone();
  ASSERT_EQ(done.size(), 2u);
  for (const TransferDone& d : done) {
    EXPECT_TRUE(d.status.ok()) << d.status.ToString();
    EXPECT_EQ(d.bytes, 3 * (*host)->page_bytes());
    EXPECT_EQ(d.id, d.direction == TransferDirection::kBackup ? b : l);
  }
  EXPECT_EQ(DevicePage(6), p3);
  EXPECT_EQ(DevicePage(7), p4);
  EXPECT_EQ(DevicePage(0), p5);
  // The page object (page_first order) is the device page's floats.
  std::vector<uint8_t> object((*host)->page_bytes());
  (*host)->ReadPage(2, object);
  EXPECT_EQ(std::memcmp(object.data(), p4.data(), object.size()), 0);
  (*host)->WritePage(5, object);
  std::vector<uint8_t> again(object.size());
  (*host)->ReadPage(5, again);
  EXPECT_EQ(again, object);
  EXPECT_EQ((*transfer)->Totals(TransferDirection::kLoad).pages, 3u);
}

INSTANTIATE_TEST_SUITE_P(Layouts, HostKvPoolTest,
                         ::testing::Values(HostLayout::kPageFirst,
                                           HostLayout::kLayerFirst),
                         [](const auto& info) {
                           return std::string(HostLayoutName(info.param));
                         });

TEST(HostLayoutTest, ParsesSGLangNames) {
  EXPECT_EQ(*ParseHostLayout("page_first"), HostLayout::kPageFirst);
  EXPECT_EQ(*ParseHostLayout("layer_first"), HostLayout::kLayerFirst);
  EXPECT_FALSE(ParseHostLayout("page_first_direct").ok());
}

}  // namespace
}  // namespace tessera::kv
