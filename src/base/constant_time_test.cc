#include "base/constant_time.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(ConstantTimeEqualsTest, EqualOnlyWhenIdentical) {
  EXPECT_TRUE(ConstantTimeEquals("Bearer k3y", "Bearer k3y"));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_FALSE(ConstantTimeEquals("Bearer k3z", "Bearer k3y"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer k3", "Bearer k3y"));
  EXPECT_FALSE(ConstantTimeEquals("Bearer k3yy", "Bearer k3y"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_FALSE(ConstantTimeEquals("x", ""));
  // A prefix padded with NULs is not the secret either.
  EXPECT_FALSE(ConstantTimeEquals(std::string_view("ab\0", 3), "ab"));
}

}  // namespace
}  // namespace tessera
