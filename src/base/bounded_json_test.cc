#include "base/bounded_json.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace tessera {
namespace {

std::string NestedObjects(size_t depth) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "1";
  s.append(depth, '}');
  return s;
}

std::string NestedArrays(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

TEST(BoundedJsonTest, ParsesOrdinaryDocumentsKeepingKeyOrder) {
  auto parsed = ParseBoundedOrderedJson(
      R"({"z": 1, "a": [true, null, 2.5, "s"], "m": {"y": -3, "b": 18446744073709551615}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(
      parsed->dump(),
      R"({"z":1,"a":[true,null,2.5,"s"],"m":{"y":-3,"b":18446744073709551615}})");
  auto plain = ParseBoundedJson(R"({"z": 1, "a": 2})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->dump(), R"({"a":2,"z":1})");
}

TEST(BoundedJsonTest, DepthAtTheLimitParsesOneDeeperFails) {
  EXPECT_TRUE(ParseBoundedOrderedJson(NestedObjects(kMaxJsonDepth)).ok());
  EXPECT_TRUE(ParseBoundedJson(NestedArrays(kMaxJsonDepth)).ok());
  JsonParseError error;
  auto deep =
      ParseBoundedOrderedJson(NestedObjects(kMaxJsonDepth + 1), {}, &error);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(error.kind, JsonParseError::Kind::kTooDeep);
  EXPECT_NE(deep.status().message().find("nested deeper than 512"),
            std::string::npos)
      << deep.status().message();
}

TEST(BoundedJsonTest, HundredThousandDeepIsAnErrorNotACrash) {
  for (const std::string& text :
       {NestedObjects(100000), NestedArrays(100000)}) {
    auto a = ParseBoundedOrderedJson(text);
    auto b = ParseBoundedJson(text);
    EXPECT_FALSE(a.ok());
    EXPECT_FALSE(b.ok());
  }
}

TEST(BoundedJsonTest, ManyKeysParseInLinearTime) {
  // 200k distinct keys: quadratic insertion (nlohmann's ordered_map) takes
  // tens of seconds here; linear takes well under one.
  std::string text = "{";
  for (int i = 0; i < 200000; ++i) {
    if (i) text += ',';
    text += "\"k" + std::to_string(i) + "\":" + std::to_string(i);
  }
  text += "}";
  const auto start = std::chrono::steady_clock::now();
  auto parsed = ParseBoundedOrderedJson(text);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->size(), 200000u);
  EXPECT_EQ(parsed->begin().key(), "k0");
  EXPECT_EQ((*parsed)["k199999"], 199999);
  // Generous bound (sanitizer builds, a loaded machine): what it guards is
  // the difference between ~0.1 s and ~60 s.
  EXPECT_LT(seconds, 10.0);
}

TEST(BoundedJsonTest, DuplicateKeysLastWinsOrRejected) {
  std::string many = "{";
  for (int i = 0; i < 40; ++i) many += "\"k" + std::to_string(i) + "\":0,";
  many += "\"k3\":7,\"k30\":8}";
  for (const std::string& text :
       {std::string(R"({"a":1,"b":2,"a":3})"), many}) {
    auto ordered = ParseBoundedOrderedJson(text);
    auto plain = ParseBoundedJson(text);
    ASSERT_TRUE(ordered.ok());
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(ordered->dump(), nlohmann::ordered_json::parse(text).dump());
    EXPECT_EQ(plain->dump(), nlohmann::json::parse(text).dump());
  }
  JsonLimits strict;
  strict.reject_duplicate_keys = true;
  JsonParseError error;
  auto rejected = ParseBoundedJson(R"({"a":1,"b":2,"a":3})", strict, &error);
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(error.kind, JsonParseError::Kind::kDuplicateKey);
  EXPECT_NE(rejected.status().message().find("\"a\" appears twice"),
            std::string::npos);
}

TEST(BoundedJsonTest, KeyLimit) {
  JsonLimits limits;
  limits.max_object_keys = 2;
  EXPECT_TRUE(ParseBoundedOrderedJson(R"({"a":1,"b":2})", limits).ok());
  JsonParseError error;
  auto three =
      ParseBoundedOrderedJson(R"({"a":1,"b":2,"c":3})", limits, &error);
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(error.kind, JsonParseError::Kind::kTooManyKeys);
}

TEST(BoundedJsonTest, SyntaxErrorsAndOverflowAreErrorsWithAPosition) {
  JsonParseError error;
  auto truncated = ParseBoundedJson(R"({"a": [1, 2)", {}, &error);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(error.kind, JsonParseError::Kind::kSyntax);
  EXPECT_GE(error.byte, 11u);
  auto overflow =
      ParseBoundedOrderedJson(R"({"temperature": 1e400})", {}, &error);
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.status().message().find("overflow"), std::string::npos)
      << overflow.status().message();
  EXPECT_FALSE(ParseBoundedJson("").ok());
  EXPECT_FALSE(ParseBoundedJson("{} {}").ok());
}

}  // namespace
}  // namespace tessera
