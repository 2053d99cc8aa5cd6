#include "tokenizer/json_util.h"

#include <fmt/format.h>

namespace tessera::tok {

const Json* FindField(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string FieldPath(std::string_view where, std::string_view key) {
  if (where.empty()) return std::string(key);
  return fmt::format("{}.{}", where, key);
}

std::string DescribeJsonType(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an unexpected value";
  }
}

namespace {

Status WrongType(std::string_view where, std::string_view key,
                 std::string_view expected, const Json& found) {
  return InvalidArgumentError(fmt::format("{}: expected {}, found {}",
                                          FieldPath(where, key), expected,
                                          DescribeJsonType(found)));
}

}  // namespace

StatusOr<std::string> RequireString(const Json& obj, std::string_view key,
                                    std::string_view where) {
  const Json* field = FindField(obj, key);
  if (field == nullptr) {
    return InvalidArgumentError(
        fmt::format("{}: required field is missing", FieldPath(where, key)));
  }
  if (!field->is_string()) return WrongType(where, key, "a string", *field);
  return field->get<std::string>();
}

StatusOr<std::string> OptionalString(const Json& obj, std::string_view key,
                                     std::string_view where,
                                     std::string fallback) {
  const Json* field = FindField(obj, key);
  if (field == nullptr) return fallback;
  if (!field->is_string()) return WrongType(where, key, "a string", *field);
  return field->get<std::string>();
}

StatusOr<bool> OptionalBool(const Json& obj, std::string_view key,
                            std::string_view where, bool fallback) {
  const Json* field = FindField(obj, key);
  if (field == nullptr) return fallback;
  if (!field->is_boolean()) return WrongType(where, key, "a boolean", *field);
  return field->get<bool>();
}

StatusOr<int64_t> OptionalInt(const Json& obj, std::string_view key,
                              std::string_view where, int64_t fallback) {
  const Json* field = FindField(obj, key);
  if (field == nullptr) return fallback;
  if (!field->is_number_integer()) {
    return WrongType(where, key, "an integer", *field);
  }
  return field->get<int64_t>();
}

StatusOr<std::string> RequireType(const Json& obj, std::string_view where) {
  if (!obj.is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: expected an object with a \"type\" field, found {}",
                    where, DescribeJsonType(obj)));
  }
  return RequireString(obj, "type", where);
}

}  // namespace tessera::tok
