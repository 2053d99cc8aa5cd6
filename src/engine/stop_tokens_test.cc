#include "engine/stop_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::engine {
namespace {

TEST(StopTokensTest, EosAndRequestStopIds) {
  const std::vector<int32_t> eos = {2, 7};
  const std::vector<int32_t> stop = {5};
  auto t = StopTokens::Create(eos, stop, /*ignore_eos=*/false, 10);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->Check(2), TokenStopReason::kEos);
  EXPECT_EQ(t->Check(7), TokenStopReason::kEos);
  EXPECT_EQ(t->Check(5), TokenStopReason::kStopToken);
  EXPECT_EQ(t->Check(3), TokenStopReason::kNone);
  EXPECT_FALSE(t->Stops(0));
  EXPECT_EQ(t->ActiveIds(), (std::vector<int32_t>{2, 5, 7}));
}

TEST(StopTokensTest, IgnoreEosKeepsRequestStopIds) {
  const std::vector<int32_t> eos = {2, 5};
  const std::vector<int32_t> stop = {5};
  auto t = StopTokens::Create(eos, stop, /*ignore_eos=*/true, 10);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Check(2), TokenStopReason::kNone);
  EXPECT_EQ(t->Check(5), TokenStopReason::kStopToken);
  EXPECT_EQ(t->ActiveIds(), (std::vector<int32_t>{5}));
}

TEST(StopTokensTest, OutOfVocabIdsNamed) {
  const std::vector<int32_t> eos = {2};
  const std::vector<int32_t> stop = {3, 10};
  auto t = StopTokens::Create(eos, stop, false, 10);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("token id 10"), std::string::npos)
      << t.status().message();
  const std::vector<int32_t> bad_eos = {-1};
  auto u = StopTokens::Create(bad_eos, {}, false, 10);
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("EOS token id -1"), std::string::npos);
}

}  // namespace
}  // namespace tessera::engine
