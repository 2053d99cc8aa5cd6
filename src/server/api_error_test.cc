#include "server/api_error.h"

#include <gtest/gtest.h>

namespace tessera::server {
namespace {

TEST(ApiErrorTest, RendersOpenAiShape) {
  ApiError e = BadRequest("'temperature' must be >= 0", "temperature");
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.Body(), R"({"error":{"message":"'temperature' must be >= 0",)"
                      R"("type":"invalid_request_error","param":"temperature",)"
                      R"("code":null}})");
}

TEST(ApiErrorTest, EmptyParamAndCodeAreNull) {
  Json j = ServiceUnavailable("queue full").ToJson();
  ASSERT_TRUE(j.contains("error"));
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["type"], "service_unavailable_error");
  EXPECT_EQ(j["error"]["code"], "server_overloaded");
}

TEST(ApiErrorTest, Helpers) {
  EXPECT_EQ(Unauthorized("bad key").http_status, 401);
  EXPECT_EQ(Unauthorized("bad key").type, "authentication_error");
  EXPECT_EQ(Unauthorized("bad key").code, "invalid_api_key");
  ApiError nf = ModelNotFound("gpt-9");
  EXPECT_EQ(nf.http_status, 404);
  EXPECT_EQ(nf.param, "model");
  EXPECT_EQ(nf.code, "model_not_found");
  EXPECT_NE(nf.message.find("gpt-9"), std::string::npos);
  EXPECT_EQ(NotFound("no route").http_status, 404);
  EXPECT_EQ(ServiceUnavailable("x").http_status, 503);
  EXPECT_EQ(InternalServerError("x").http_status, 500);
  ApiError u = UnsupportedParameter("suffix");
  EXPECT_EQ(u.http_status, 400);
  EXPECT_EQ(u.param, "suffix");
  EXPECT_EQ(u.code, "unsupported_parameter");
  EXPECT_NE(u.message.find("not supported"), std::string::npos);
}

TEST(ApiErrorTest, FromStatus) {
  EXPECT_EQ(ApiErrorFromStatus(InvalidArgumentError("x")).http_status, 400);
  EXPECT_EQ(ApiErrorFromStatus(NotFoundError("x")).http_status, 404);
  EXPECT_EQ(ApiErrorFromStatus(ResourceExhaustedError("x")).http_status, 503);
  EXPECT_EQ(ApiErrorFromStatus(UnavailableError("x")).http_status, 503);
  EXPECT_EQ(ApiErrorFromStatus(InternalError("boom")).http_status, 500);
  EXPECT_EQ(ApiErrorFromStatus(InternalError("boom")).message, "boom");
}

TEST(ApiErrorTest, InvalidUtf8DoesNotThrow) {
  ApiError e = BadRequest(std::string("bad \xff byte"));
  EXPECT_NO_THROW((void)e.Body());
}

}  // namespace
}  // namespace tessera::server
