// Helpers shared by the request-parsing tests of src/server (OpenAI and
// native protocols): a JSON body from text, and the 400 a bad field gets.
#ifndef TESSERA_SERVER_PROTOCOL_TEST_UTIL_H_
#define TESSERA_SERVER_PROTOCOL_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <string>

#include "server/api_error.h"
#include "server/openai_request.h"

namespace tessera::server::testing {

inline Json ParseJson(const std::string& text) { return Json::parse(text); }

// Expects a 400 invalid_request_error naming `param` whose message contains
// `needle`.
inline void ExpectBadParam(const MaybeApiError& e, const std::string& param,
                           const std::string& needle) {
  ASSERT_TRUE(e.has_value()) << "expected an error on " << param;
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->type, "invalid_request_error");
  EXPECT_EQ(e->param, param) << e->message;
  EXPECT_NE(e->message.find(needle), std::string::npos) << e->message;
}

}  // namespace tessera::server::testing

#endif  // TESSERA_SERVER_PROTOCOL_TEST_UTIL_H_
