// Typed readers for the fields of a JSON request body. Each reader leaves
// its output untouched when the key is absent or JSON null (OpenAI clients
// send null for "not set") and returns a 400 ApiError naming the key when
// the value has the wrong type. Range checks stay with the callers.
// Stateless; thread-safe.
#ifndef TESSERA_SERVER_JSON_FIELDS_H_
#define TESSERA_SERVER_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace tessera::server {

// "a string", "an integer", "null", ... for messages.
std::string JsonTypeName(const Json& value);

// 400 "'<param>' must be <expected>, not <type>".
ApiError WrongType(const std::string& param, std::string_view expected,
                   const Json& value);

// True when `body` has `key` with a non-null value.
bool HasValue(const Json& body, const char* key);

MaybeApiError ReadBool(const Json& body, const char* key, bool* out);
MaybeApiError ReadString(const Json& body, const char* key,
                         std::optional<std::string>* out);
// Accepts any JSON number (integers included).
MaybeApiError ReadNumber(const Json& body, const char* key,
                         std::optional<double>* out);
// Accepts integers, and floats with no fractional part (some clients send
// 16.0).
MaybeApiError ReadInteger(const Json& body, const char* key,
                          std::optional<int64_t>* out);
// Converts one JSON value to an int32 token id in [0, INT32_MAX]; `param`
// names it in errors ("prompt[0][3]").
MaybeApiError ReadTokenId(const Json& value, const std::string& param,
                          int32_t* out);
// An array of token ids.
MaybeApiError ReadTokenIds(const Json& value, const std::string& param,
                           std::vector<int32_t>* out);
// A string or an array of strings (stop). Empty strings are rejected.
MaybeApiError ReadStringOrList(const Json& body, const char* key,
                               std::vector<std::string>* out);

// A 400 naming the first key of `body` in neither `known` nor
// `also_known`; `what` names the request ("chat completions"). The one rule
// of every route: a field the server does not know is an error, never
// silently ignored.
MaybeApiError RejectUnknownFields(const Json& body,
                                  std::initializer_list<const char*> known,
                                  std::string_view what,
                                  std::span<const char* const> also_known = {});

}  // namespace tessera::server

#endif  // TESSERA_SERVER_JSON_FIELDS_H_
