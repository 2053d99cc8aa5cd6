#include "server/cors.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::server {
namespace {

std::string HeaderOf(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

HttpRequest RequestFrom(const std::string& method, const std::string& origin,
                        bool preflight) {
  HttpRequest r;
  r.method = method;
  r.path = "/v1/chat/completions";
  if (!origin.empty()) r.headers.emplace_back("Origin", origin);
  if (preflight) r.headers.emplace_back("Access-Control-Request-Method", "POST");
  return r;
}

TEST(CorsTest, OriginListsAreNormalizedOrRefusedByEntry) {
  std::vector<std::string> v = {"http://a.example:8080", " https://b.example"};
  ASSERT_TRUE(NormalizeAllowedOrigins(&v).ok());
  EXPECT_EQ(v, (std::vector<std::string>{"http://a.example:8080",
                                         "https://b.example"}));
  // vLLM's JSON list, whole or as the flag parser splits it at commas.
  v = {R"(["http://a.example", "*"])"};
  ASSERT_TRUE(NormalizeAllowedOrigins(&v).ok());
  EXPECT_EQ(v, (std::vector<std::string>{"http://a.example", "*"}));
  v = {R"(["http://a.example")", R"( "*"])"};
  ASSERT_TRUE(NormalizeAllowedOrigins(&v).ok());
  EXPECT_EQ(v, (std::vector<std::string>{"http://a.example", "*"}));
  v = {};
  ASSERT_TRUE(NormalizeAllowedOrigins(&v).ok());
  EXPECT_TRUE(v.empty());
  for (const char* bad : {"http://a.example/", "a.example", "http://",
                          "://x", "http://a b"}) {
    v = {bad};
    Status s = NormalizeAllowedOrigins(&v);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("scheme://host[:port]"), std::string::npos)
        << s.message();
  }
}

TEST(CorsTest, AllowedOriginsGetHeadersOthersDoNot) {
  const CorsPolicy off({});
  EXPECT_FALSE(off.enabled());
  HttpResponse r;
  off.AddHeaders(RequestFrom("POST", "http://a.example", false), r);
  EXPECT_TRUE(r.headers.empty());

  const CorsPolicy on({"http://a.example"});
  EXPECT_TRUE(CorsPolicy::IsPreflight(RequestFrom("OPTIONS", "http://a.example", true)));
  EXPECT_FALSE(CorsPolicy::IsPreflight(RequestFrom("OPTIONS", "", true)));
  EXPECT_FALSE(CorsPolicy::IsPreflight(RequestFrom("OPTIONS", "http://a.example", false)));
  HttpResponse pre;
  on.AnswerPreflight(RequestFrom("OPTIONS", "http://a.example", true), pre);
  EXPECT_EQ(pre.status, 200);
  EXPECT_EQ(HeaderOf(pre, "Access-Control-Allow-Origin"), "http://a.example");
  EXPECT_EQ(HeaderOf(pre, "Access-Control-Allow-Headers"),
            "Authorization, Content-Type");
  HttpResponse denied;
  on.AnswerPreflight(RequestFrom("OPTIONS", "http://b.example", true), denied);
  EXPECT_EQ(denied.status, 403);
  EXPECT_NE(denied.body.find("--allowed-origins"), std::string::npos);
  EXPECT_EQ(HeaderOf(denied, "Access-Control-Allow-Origin"), "");
  HttpResponse actual;
  on.AddHeaders(RequestFrom("POST", "http://a.example", false), actual);
  EXPECT_EQ(HeaderOf(actual, "Access-Control-Allow-Origin"), "http://a.example");
  EXPECT_EQ(HeaderOf(actual, "Vary"), "Origin");
  HttpResponse other;
  on.AddHeaders(RequestFrom("POST", "http://b.example", false), other);
  EXPECT_TRUE(other.headers.empty());

  const CorsPolicy any({"*"});
  EXPECT_EQ(any.AllowOrigin("http://z.example"), "*");
  EXPECT_EQ(any.AllowOrigin(""), std::nullopt);
}

}  // namespace
}  // namespace tessera::server
