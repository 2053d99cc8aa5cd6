#include "server/embeddings_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace tessera::server {
namespace {

using ::testing::HasSubstr;

EmbeddingRequest ParseEmbeddingRequest(const char* text) {
  EmbeddingRequest r;
  auto e = ParseEmbeddingRequest(Json::parse(text), ProtocolLimits{}, &r);
  EXPECT_FALSE(e.has_value()) << e->message;
  return r;
}

ApiError ParseError(const char* text) {
  EmbeddingRequest r;
  auto e = ParseEmbeddingRequest(Json::parse(text), ProtocolLimits{}, &r);
  EXPECT_TRUE(e.has_value()) << text;
  return e.value_or(ApiError{});
}

TEST(EmbeddingsProtocolTest, InputsLikeOpenAis) {
  EmbeddingRequest r = ParseEmbeddingRequest(R"({"model": "m", "input": "hello"})");
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].text, "hello");
  EXPECT_FALSE(r.base64);
  r = ParseEmbeddingRequest(R"({"input": ["a", [1, 2, 3]], "encoding_format": "base64",
               "dimensions": 8, "user": "u"})");
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_TRUE(r.inputs[1].is_token_ids);
  EXPECT_EQ(r.inputs[1].token_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_TRUE(r.base64);
  EXPECT_EQ(r.dimensions, 8);
  r = ParseEmbeddingRequest(R"({"input": [5, 6]})");
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].token_ids, (std::vector<int32_t>{5, 6}));
}

TEST(EmbeddingsProtocolTest, BadFieldsAreNamed) {
  EXPECT_EQ(ParseError(R"({"model": "m"})").param, "input");
  EXPECT_EQ(ParseError(R"({"input": []})").param, "input");
  EXPECT_EQ(ParseError(R"({"input": "a", "encoding_format": "int8"})").param,
            "encoding_format");
  EXPECT_EQ(ParseError(R"({"input": "a", "dimensions": 0})").param, "dimensions");
  EXPECT_EQ(ParseError(R"({"input": [[]]})").param, "input");
  ApiError unknown = ParseError(R"({"input": "a", "pooling": "mean"})");
  EXPECT_THAT(unknown.message, HasSubstr("pooling"));
}

TEST(EmbeddingsProtocolTest, DimensionsKeepAPrefixRenormalized) {
  std::vector<float> v = {0.6f, 0.0f, 0.8f, 0.0f};
  ASSERT_FALSE(ReduceDimensions(std::nullopt, true, &v).has_value());
  EXPECT_EQ(v.size(), 4u);
  std::vector<float> w = {3, 4, 12};
  ASSERT_FALSE(ReduceDimensions(2, true, &w).has_value());
  EXPECT_THAT(w, ::testing::ElementsAre(0.6f, 0.8f));
  std::vector<float> raw = {3, 4, 12};
  ASSERT_FALSE(ReduceDimensions(2, false, &raw).has_value());
  EXPECT_THAT(raw, ::testing::ElementsAre(3.0f, 4.0f));
  auto too_many = ReduceDimensions(5, true, &raw);
  ASSERT_TRUE(too_many.has_value());
  EXPECT_EQ(too_many->param, "dimensions");
}

TEST(EmbeddingsProtocolTest, Base64IsTheLittleEndianFloatBytes) {
  // 1.0f = 00 00 80 3f; -2.0f = 00 00 00 c0 -> base64 of those 8 bytes.
  const float v[] = {1.0f, -2.0f};
  EXPECT_EQ(EmbeddingBase64(v), "AACAPwAAAMA=");
  Json j = EmbeddingResponseJson("m", {{1.0f, -2.0f}, {0.5f}}, false, 7);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][1]["object"], "embedding");
  EXPECT_EQ(j["data"][0]["embedding"][1], -2.0);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  EXPECT_EQ(EmbeddingResponseJson("m", {{1.0f, -2.0f}}, true, 2)["data"][0]["embedding"],
            "AACAPwAAAMA=");
}

}  // namespace
}  // namespace tessera::server
