#include "base/env.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tessera {
namespace {

TEST(EnvTest, SplitList) {
  EXPECT_EQ(SplitList("a, b,,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(SplitList("").empty());
}

TEST(EnvTest, GetEnvInt) {
  setenv("TSR_TEST_INT", "3", 1);
  auto v = GetEnvInt("TSR_TEST_INT");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value(), 3);
  setenv("TSR_TEST_INT", "x", 1);
  auto bad = GetEnvInt("TSR_TEST_INT");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("TSR_TEST_INT"), std::string::npos);
  unsetenv("TSR_TEST_INT");
  EXPECT_FALSE(GetEnvInt("TSR_TEST_INT")->has_value());
}

}  // namespace
}  // namespace tessera
