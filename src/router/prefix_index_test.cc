#include "router/prefix_index.h"

#include <gtest/gtest.h>

#include <string>

namespace tessera::router {
namespace {

TEST(ApproxPrefixIndexTest, MatchesWholeBlocksOfInsertedPrefixes) {
  ApproxPrefixIndex index;
  const std::string system(100, 's');
  index.Insert(system + " question one");
  // Three whole 32-byte blocks of the shared system prompt match.
  EXPECT_EQ(index.Match(system + " another question"), 96u);
  EXPECT_EQ(index.Match("different start" + system), 0u);
  EXPECT_EQ(index.Match("short"), 0u);
}

TEST(ApproxPrefixIndexTest, ABlockMatchesOnlyAfterTheSamePrefix) {
  ApproxPrefixIndex index;
  index.Insert(std::string(32, 'a') + std::string(32, 'b'));
  // Block "b" after a different first block is another prefix.
  EXPECT_EQ(index.Match(std::string(32, 'c') + std::string(32, 'b')), 0u);
  EXPECT_EQ(index.Match(std::string(32, 'a') + std::string(32, 'c')), 32u);
}

TEST(ApproxPrefixIndexTest, ForgetsTheLeastRecentlyUsedBeyondItsSize) {
  ApproxPrefixIndex index(/*max_blocks=*/2);
  const std::string a(32, 'a'), b(32, 'b'), c(32, 'c');
  index.Insert(a);
  index.Insert(b);
  EXPECT_EQ(index.Match(a), 32u);  // a is now the most recent
  index.Insert(c);                 // b goes
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.Match(b), 0u);
  EXPECT_EQ(index.Match(a), 32u);
  EXPECT_EQ(index.Match(c), 32u);
}

}  // namespace
}  // namespace tessera::router
