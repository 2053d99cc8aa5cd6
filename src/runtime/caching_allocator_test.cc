// CachingAllocator reuse, size classes, trimming and accounting, on the
// minimal example plugin.
#include "runtime/caching_allocator.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "runtime/test_util.h"

namespace tessera::runtime {
namespace {

class CachingAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto lib = PluginLibrary::Open(testing::MinimalPluginPath());
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    plugin_ = std::make_unique<Plugin>(std::move(lib).value());
    ASSERT_TRUE(plugin_->Init({}).ok());
  }
  std::unique_ptr<Plugin> plugin_;
};

TEST(SizeClassTest, RoundsUpWithBoundedWaste) {
  EXPECT_EQ(CachingAllocator::SizeClass(0), 256u);
  EXPECT_EQ(CachingAllocator::SizeClass(1), 256u);
  EXPECT_EQ(CachingAllocator::SizeClass(256), 256u);
  EXPECT_EQ(CachingAllocator::SizeClass(257), 320u);
  EXPECT_EQ(CachingAllocator::SizeClass(1024), 1024u);
  EXPECT_EQ(CachingAllocator::SizeClass(1025), 1280u);
  for (uint64_t size = 1; size < (1u << 22); size = size * 3 + 7) {
    uint64_t c = CachingAllocator::SizeClass(size);
    EXPECT_GE(c, size);
    if (size > 256) {
      EXPECT_LE(c, size + size / 4) << size;
    }
    EXPECT_EQ(CachingAllocator::SizeClass(c), c) << "classes are fixed points";
  }
}

TEST_F(CachingAllocatorTest, ReusesFreedBlocks) {
  CachingAllocator pool(*plugin_, 0, TSR_MEM_DEVICE);
  tsr_buffer first;
  {
    auto a = pool.Allocate(1000);
    ASSERT_TRUE(a.ok());
    first = (*a)->handle();
    EXPECT_EQ((*a)->size(), 1000u);
    EXPECT_EQ((*a)->capacity(), CachingAllocator::SizeClass(1000));
  }
  auto stats = pool.stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 0u);
  EXPECT_EQ(stats.cached_blocks, 1u);
  // Same class (1000 and 1010 both round to 1024): the block comes back.
  auto b = pool.Allocate(1010);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->handle(), first);
  // A different class misses.
  auto c = pool.Allocate(5000);
  ASSERT_TRUE(c.ok());
  EXPECT_NE((*c)->handle(), first);
  stats = pool.stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.plugin_allocations, 2u);
  EXPECT_EQ(stats.in_use_blocks, 2u);
  EXPECT_EQ(stats.cached_blocks, 0u);
}

TEST_F(CachingAllocatorTest, AccountsRequestedAndReservedSeparately) {
  CachingAllocator pool(*plugin_, 0, TSR_MEM_DEVICE);
  {
    auto a = pool.Allocate(100);
    auto b = pool.Allocate(3000);
    ASSERT_TRUE(a.ok() && b.ok());
    MemoryStats m = plugin_->accounting().Get(0, TSR_MEM_DEVICE);
    EXPECT_EQ(m.requested_bytes, 3100u);
    EXPECT_EQ(m.reserved_bytes, 256u + 3072u);  // size classes, 64-aligned
    EXPECT_EQ(m.live_buffers, 2u);
  }
  MemoryStats m = plugin_->accounting().Get(0, TSR_MEM_DEVICE);
  EXPECT_EQ(m.requested_bytes, 0u);
  EXPECT_EQ(m.requested_peak, 3100u);
  // Cached blocks stay reserved until Trim.
  EXPECT_EQ(m.reserved_bytes, 256u + 3072u);
  ASSERT_TRUE(pool.Trim().ok());
  m = plugin_->accounting().Get(0, TSR_MEM_DEVICE);
  EXPECT_EQ(m.reserved_bytes, 0u);
  EXPECT_EQ(m.reserved_peak, 256u + 3072u);
  EXPECT_EQ(m.plugin_frees, 2u);
  auto stats = pool.stats();
  EXPECT_EQ(stats.cached_blocks, 0u);
  EXPECT_EQ(stats.plugin_frees, 2u);
}

TEST_F(CachingAllocatorTest, CapOnCachedBytes) {
  CachingAllocator::Options options;
  options.max_cached_bytes = 1024;
  CachingAllocator pool(*plugin_, 0, TSR_MEM_DEVICE, options);
  {
    auto a = pool.Allocate(1024);
    auto b = pool.Allocate(1024);
    ASSERT_TRUE(a.ok() && b.ok());
  }
  auto stats = pool.stats();
  EXPECT_EQ(stats.cached_blocks, 1u);  // the second went back to the plugin
  EXPECT_EQ(stats.plugin_frees, 1u);
}

TEST_F(CachingAllocatorTest, OutOfMemoryIsAnError) {
  CachingAllocator pool(*plugin_, 0, TSR_MEM_DEVICE);
  auto huge = pool.Allocate(uint64_t{1} << 60);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(huge.status().message().find("minimal plugin"), std::string::npos);
}

TEST_F(CachingAllocatorTest, ConcurrentAllocateAndFree) {
  CachingAllocator pool(*plugin_, 0, TSR_MEM_DEVICE);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 200; ++i) {
        auto a = pool.Allocate(64 + 64 * ((i + t) % 5));
        ASSERT_TRUE(a.ok());
        uint32_t value = uint32_t(i);
        ASSERT_TRUE((*a)->CopyFromHost(0, &value, 4).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  auto stats = pool.stats();
  EXPECT_EQ(stats.hits + stats.misses, 800u);
  EXPECT_EQ(stats.in_use_blocks, 0u);
  // At most 4 live blocks per class at once, so few plugin calls.
  EXPECT_LE(stats.misses, 4u * 5u);
  EXPECT_EQ(stats.cached_blocks, stats.plugin_allocations);
}

}  // namespace
}  // namespace tessera::runtime
