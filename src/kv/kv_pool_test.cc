// KvPool on the real runtime (the plugin chosen as the engine would choose
// it; the cpu plugin on a machine without accelerators).
#include "kv/kv_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "runtime/runtime.h"

namespace tessera::kv {
namespace {

class KvPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto config = runtime::RuntimeConfig::FromEnvironment();
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    auto rt = runtime::Runtime::Create(*config);
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(rt).value();
    ASSERT_TRUE(runtime_->CheckUsable().ok());
  }
  runtime::Device& device() { return runtime_->device(0); }

  static KvPoolOptions Small() {
    KvPoolOptions o;
    o.num_layers = 2;
    o.num_kv_heads = 2;
    o.head_dim = 4;
    o.dtype = TSR_DTYPE_F32;
    o.page_size = 4;
    o.capacity_tokens = 30;  // 8 pages
    return o;
  }

  std::unique_ptr<runtime::Runtime> runtime_;
};

TEST_F(KvPoolTest, SizedByTokensRoundsUpToPages) {
  auto pool = KvPool::Create(device(), Small());
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  KvPool& p = **pool;
  EXPECT_EQ(p.num_pages(), 8);
  EXPECT_EQ(p.num_slots(), 32);
  EXPECT_EQ(p.num_free_pages(), 8);
  EXPECT_EQ(p.num_used_pages(), 0);
  // 2 (K, V) * 2 layers * 4 slots * 2 heads * 4 dims * 4 bytes.
  EXPECT_EQ(KvPool::BytesPerPage(Small()), 512u);
  EXPECT_EQ(p.total_bytes(), 8u * 512u);
  tsr_tensor k = p.KCache(1);
  EXPECT_EQ(k.ndim, 3);
  EXPECT_EQ(k.shape[0], 36);  // 8 pages + the scratch page
  EXPECT_EQ(p.slab_slots(), 36);
  EXPECT_EQ(p.scratch_page(), 8);
  EXPECT_EQ(k.shape[1], 2);
  EXPECT_EQ(k.shape[2], 4);
  EXPECT_EQ(k.dtype, TSR_DTYPE_F32);
  EXPECT_NE(p.KCache(0).buffer, p.VCache(0).buffer);
  EXPECT_NE(p.KCache(0).buffer, p.KCache(1).buffer);
  EXPECT_TRUE(p.CheckIntegrity().ok());
}

TEST_F(KvPoolTest, SizedByMemoryBudget) {
  KvPoolOptions o = Small();
  o.capacity_tokens = 0;
  o.dtype = TSR_DTYPE_BF16;  // 256 bytes a page
  o.memory_budget_bytes = 256 * 5 + 100;
  auto pool = KvPool::Create(device(), o);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ((*pool)->num_pages(), 5);
  EXPECT_LE((*pool)->total_bytes(), o.memory_budget_bytes);
}

TEST_F(KvPoolTest, RejectsBadOptionsWithReasons) {
  KvPoolOptions both = Small();
  both.memory_budget_bytes = 1 << 20;
  auto a = KvPool::Create(device(), both);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("exactly one"), std::string::npos);

  KvPoolOptions neither = Small();
  neither.capacity_tokens = 0;
  EXPECT_EQ(KvPool::Create(device(), neither).status().code(),
            StatusCode::kInvalidArgument);

  KvPoolOptions tiny_budget = Small();
  tiny_budget.capacity_tokens = 0;
  tiny_budget.memory_budget_bytes = 100;
  auto b = KvPool::Create(device(), tiny_budget);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("holds no page"), std::string::npos);

  KvPoolOptions bad_page = Small();
  bad_page.page_size = 0;
  EXPECT_EQ(KvPool::Create(device(), bad_page).status().code(),
            StatusCode::kInvalidArgument);

  KvPoolOptions bad_dtype = Small();
  bad_dtype.dtype = TSR_DTYPE_I32;
  EXPECT_EQ(KvPool::Create(device(), bad_dtype).status().code(),
            StatusCode::kInvalidArgument);
}

TEST_F(KvPoolTest, TooLargeForTheDeviceIsResourceExhausted) {
  KvPoolOptions o = Small();
  o.num_kv_heads = 1 << 16;
  o.head_dim = 1 << 12;
  o.capacity_tokens = 1 << 16;  // 2^44 elements a slab
  auto pool = KvPool::Create(device(), o);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), StatusCode::kResourceExhausted)
      << pool.status().ToString();
  EXPECT_NE(pool.status().message().find("lower the KV capacity"),
            std::string::npos);
}

TEST_F(KvPoolTest, EnsureCapacityGrowsAllOrNothing) {
  auto pool = KvPool::Create(device(), Small());
  ASSERT_TRUE(pool.ok());
  KvPool& p = **pool;
  std::vector<int32_t> a, b;
  ASSERT_TRUE(p.EnsureCapacity(a, 5).ok());  // 2 pages
  EXPECT_EQ(a.size(), 2u);
  ASSERT_TRUE(p.EnsureCapacity(a, 8).ok());  // still 2 pages
  EXPECT_EQ(a.size(), 2u);
  ASSERT_TRUE(p.EnsureCapacity(a, 3).ok());  // never shrinks
  EXPECT_EQ(a.size(), 2u);
  ASSERT_TRUE(p.EnsureCapacity(b, 20).ok());  // 5 pages
  EXPECT_EQ(p.num_used_pages(), 7);
  Status s = p.EnsureCapacity(a, 13);  // needs 2 more, 1 free
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("asked for 2 pages, 1 of 8 pages are free"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("from 8 to 13 tokens"), std::string::npos);
  EXPECT_EQ(a.size(), 2u);
  ASSERT_TRUE(p.Release(b).ok());
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(p.num_free_pages(), 6);
  ASSERT_TRUE(p.EnsureCapacity(a, 13).ok());
  EXPECT_EQ(a.size(), 4u);
  EXPECT_TRUE(p.CheckIntegrity().ok());
  std::vector<int32_t> bogus = {a[0], a[0]};
  ASSERT_TRUE(p.FreePages(std::span<const int32_t>(bogus).first(1)).ok());
  EXPECT_FALSE(p.FreePages(std::span<const int32_t>(bogus).first(1)).ok());
  EXPECT_TRUE(p.CheckIntegrity().ok());
}

// kv_store through the dispatcher writes each token where SlotOf says, in
// the (slot, kv_head, head_dim) layout of the slabs.
TEST_F(KvPoolTest, SlabLayoutMatchesTheKvStoreOp) {
  auto pool = KvPool::Create(device(), Small());
  ASSERT_TRUE(pool.ok());
  KvPool& p = **pool;
  // A sequence on pages 5, 2 (non-contiguous, reversed order).
  std::vector<int32_t> filler, pages;
  ASSERT_TRUE(p.AllocatePages(2, filler).ok());  // 0, 1
  auto p2 = p.AllocatePage();                    // 2
  ASSERT_TRUE(p.AllocatePages(2, filler).ok());  // 3, 4
  auto p5 = p.AllocatePage();                    // 5
  ASSERT_TRUE(p2.ok() && p5.ok());
  pages = {*p5, *p2};
  EXPECT_EQ(p.SlotOf(pages, 0), 20);
  EXPECT_EQ(p.SlotOf(pages, 3), 23);
  EXPECT_EQ(p.SlotOf(pages, 4), 8);
  EXPECT_EQ(p.SlotOf(pages, 6), 10);

  const int64_t t = 6, hk = 2, d = 4;
  std::vector<float> k(t * hk * d), v(t * hk * d);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = float(i) + 0.5f;
    v[i] = -float(i);
  }
  std::vector<int32_t> slots(t);
  for (int64_t i = 0; i < t; ++i) slots[i] = p.SlotOf(pages, i);
  auto kb = device().Allocate(k.size() * 4);
  auto vb = device().Allocate(v.size() * 4);
  auto sb = device().Allocate(slots.size() * 4);
  ASSERT_TRUE(kb.ok() && vb.ok() && sb.ok());
  ASSERT_TRUE((*kb)->CopyFromHost(0, k.data(), k.size() * 4).ok());
  ASSERT_TRUE((*vb)->CopyFromHost(0, v.data(), v.size() * 4).ok());
  ASSERT_TRUE((*sb)->CopyFromHost(0, slots.data(), slots.size() * 4).ok());
  auto stream = device().CreateStream();
  ASSERT_TRUE(stream.ok());
  tsr_tensor in[3] = {(*kb)->View(TSR_DTYPE_F32, {t, hk, d}),
                      (*vb)->View(TSR_DTYPE_F32, {t, hk, d}),
                      (*sb)->View(TSR_DTYPE_I32, {t})};
  tsr_tensor out[2] = {p.KCache(1), p.VCache(1)};
  ASSERT_TRUE(
      runtime_->dispatcher().Launch(**stream, TSR_OP_KV_STORE, in, out).ok());
  ASSERT_TRUE((*stream)->Synchronize().ok());

  std::vector<float> kc(p.slab_slots() * hk * d), vc(kc.size()), k0(kc.size());
  ASSERT_TRUE(p.k_buffer(1).CopyToHost(kc.data(), 0, kc.size() * 4).ok());
  ASSERT_TRUE(p.v_buffer(1).CopyToHost(vc.data(), 0, vc.size() * 4).ok());
  ASSERT_TRUE(p.k_buffer(0).CopyToHost(k0.data(), 0, k0.size() * 4).ok());
  // Head-major slabs: (slot, head, i) at (head * S + slot) * D + i.
  const int64_t s = p.slab_slots();
  for (int64_t pos = 0; pos < t; ++pos) {
    const int64_t slot = p.SlotOf(pages, pos);
    for (int64_t h = 0; h < hk; ++h) {
      for (int64_t i = 0; i < d; ++i) {
        EXPECT_EQ(kc[(h * s + slot) * d + i], k[(pos * hk + h) * d + i]) << pos;
        EXPECT_EQ(vc[(h * s + slot) * d + i], v[(pos * hk + h) * d + i]) << pos;
      }
    }
  }
  // Untouched slots and the other layer stay zero (zero_fill).
  EXPECT_EQ(kc[0], 0.0f);
  for (float x : k0) ASSERT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace tessera::kv
