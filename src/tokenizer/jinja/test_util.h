// Helpers for the Jinja engine's unit tests.
#ifndef TESSERA_TOKENIZER_JINJA_TEST_UTIL_H_
#define TESSERA_TOKENIZER_JINJA_TEST_UTIL_H_

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "tokenizer/jinja/template.h"

namespace tessera::jinja::testing {

using Json = nlohmann::ordered_json;

// Parses and renders `source` with Hugging Face's settings.
inline StatusOr<std::string> Render(std::string_view source,
                                    const Json& vars = Json::object()) {
  TSR_ASSIGN_OR_RETURN(Template t, Template::Parse(source));
  return t.RenderJson(vars);
}

// The rendered text, or "ERROR: <status>" so a failed EXPECT_EQ shows why.
inline std::string R(std::string_view source,
                     const Json& vars = Json::object()) {
  auto r = Render(source, vars);
  return r.ok() ? *r : "ERROR: " + r.status().ToString();
}

// The error of a render that must fail ("" when it succeeded).
inline Status Err(std::string_view source, const Json& vars = Json::object()) {
  auto r = Render(source, vars);
  return r.ok() ? InternalError("rendered without error: " + *r) : r.status();
}

}  // namespace tessera::jinja::testing

#endif  // TESSERA_TOKENIZER_JINJA_TEST_UTIL_H_
