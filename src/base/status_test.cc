#include "base/status.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd");
  return x / 2;
}

Status Quarter(int x, int* out) {
  TSR_ASSIGN_OR_RETURN(int half, Half(x));
  TSR_ASSIGN_OR_RETURN(*out, Half(half));
  return OkStatus();
}

TEST(StatusTest, OkAndErrors) {
  EXPECT_TRUE(OkStatus().ok());
  Status s = NotFoundError("no file x");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.ToString(), "NOT_FOUND: no file x");
  EXPECT_EQ(s.WithContext("loading").message(), "loading: no file x");
}

TEST(StatusTest, StatusOrPropagates) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "odd");
}

}  // namespace
}  // namespace tessera
