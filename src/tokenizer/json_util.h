// Typed access to tokenizer.json fields with errors that name the field.
//
// `where` is the JSON path of the object being read ("model",
// "pre_tokenizer.pretokenizers[1]"); messages read "<where>.<key>: ...".
// A field holding JSON null counts as absent. Stateless; thread-safe.
#ifndef TESSERA_TOKENIZER_JSON_UTIL_H_
#define TESSERA_TOKENIZER_JSON_UTIL_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera::tok {

using Json = nlohmann::json;

// The field, or nullptr when `obj` is not an object, lacks it or holds null.
const Json* FindField(const Json& obj, std::string_view key);

// "<where>.<key>" (or just the key when `where` is empty).
std::string FieldPath(std::string_view where, std::string_view key);

StatusOr<std::string> RequireString(const Json& obj, std::string_view key,
                                    std::string_view where);
StatusOr<std::string> OptionalString(const Json& obj, std::string_view key,
                                     std::string_view where,
                                     std::string fallback);
StatusOr<bool> OptionalBool(const Json& obj, std::string_view key,
                            std::string_view where, bool fallback);
StatusOr<int64_t> OptionalInt(const Json& obj, std::string_view key,
                              std::string_view where, int64_t fallback);
// The object's "type" string (required).
StatusOr<std::string> RequireType(const Json& obj, std::string_view where);

// Short name of a JSON value's type for messages ("a string", "null").
std::string DescribeJsonType(const Json& value);

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_JSON_UTIL_H_
