#include "kv/page_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace tessera::kv {
namespace {

TEST(PageAllocatorTest, StartsAllFreeAndHandsOutLowIdsFirst) {
  PageAllocator a(4);
  EXPECT_EQ(a.num_pages(), 4);
  EXPECT_EQ(a.num_free(), 4);
  EXPECT_EQ(a.num_used(), 0);
  auto p0 = a.Allocate();
  auto p1 = a.Allocate();
  ASSERT_TRUE(p0.ok() && p1.ok());
  EXPECT_EQ(*p0, 0);
  EXPECT_EQ(*p1, 1);
  EXPECT_EQ(a.num_used(), 2);
  EXPECT_TRUE(a.IsAllocated(0));
  EXPECT_FALSE(a.IsAllocated(2));
  EXPECT_FALSE(a.IsAllocated(-1));
  EXPECT_FALSE(a.IsAllocated(4));
  EXPECT_TRUE(a.CheckIntegrity().ok());
}

TEST(PageAllocatorTest, AllocateManyIsAllOrNothing) {
  PageAllocator a(5);
  std::vector<int32_t> pages = {99};  // appended to, not replaced
  ASSERT_TRUE(a.Allocate(3, pages).ok());
  EXPECT_EQ(pages, (std::vector<int32_t>{99, 0, 1, 2}));
  Status s = a.Allocate(3, pages);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("asked for 3 pages, 2 of 5 pages are free"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(pages.size(), 4u);  // untouched
  EXPECT_EQ(a.num_free(), 2);
  EXPECT_TRUE(a.Allocate(0, pages).ok());
  EXPECT_EQ(a.Allocate(-1, pages).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(a.CheckIntegrity().ok());
}

TEST(PageAllocatorTest, SingleAllocateWhenEmptyExplains) {
  PageAllocator a(1);
  ASSERT_TRUE(a.Allocate().ok());
  auto p = a.Allocate();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(p.status().message().find("asked for 1 page, 0 of 1"),
            std::string::npos);
}

TEST(PageAllocatorTest, FreeReturnsPagesAndRejectsBadFrees) {
  PageAllocator a(3);
  std::vector<int32_t> pages;
  ASSERT_TRUE(a.Allocate(3, pages).ok());
  EXPECT_TRUE(a.Free(1).ok());
  EXPECT_EQ(a.num_free(), 1);
  Status twice = a.Free(1);
  EXPECT_EQ(twice.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(twice.message().find("not allocated"), std::string::npos);
  EXPECT_EQ(a.Free(3).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.Free(-2).code(), StatusCode::kInvalidArgument);
  // The freed page is the next one handed out (LIFO).
  auto again = a.Allocate();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 1);
  EXPECT_TRUE(a.Free(std::vector<int32_t>{0, 1, 2}).ok());
  EXPECT_EQ(a.num_free(), 3);
  EXPECT_TRUE(a.CheckIntegrity().ok());
}

TEST(PageAllocatorTest, ChurnKeepsEveryPageAccountedFor) {
  constexpr int kPages = 1000;
  PageAllocator a(kPages);
  std::vector<std::vector<int32_t>> seqs(10);
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state >> 33);
  };
  for (int round = 0; round < 2000; ++round) {
    auto& seq = seqs[next() % seqs.size()];
    if (next() % 3 == 0) {
      ASSERT_TRUE(a.Free(seq).ok());
      seq.clear();
    } else {
      Status s = a.Allocate(next() % 40, seq);
      ASSERT_TRUE(s.ok() || s.code() == StatusCode::kResourceExhausted);
    }
    int64_t held = 0;
    for (const auto& s : seqs) held += static_cast<int64_t>(s.size());
    ASSERT_EQ(held, a.num_used());
  }
  std::set<int32_t> all;
  for (const auto& s : seqs) all.insert(s.begin(), s.end());
  EXPECT_EQ(static_cast<int64_t>(all.size()), a.num_used());  // no duplicates
  EXPECT_TRUE(a.CheckIntegrity().ok());
}

}  // namespace
}  // namespace tessera::kv
