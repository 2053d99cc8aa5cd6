#include "server/json_fields.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "base/logging.h"

namespace tessera::server {

std::string JsonTypeName(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported JSON value";
  }
}

ApiError WrongType(const std::string& param, std::string_view expected,
                   const Json& value) {
  return BadRequest(fmt::format("'{}' must be {}, not {}", param, expected,
                                JsonTypeName(value)),
                    param);
}

bool HasValue(const Json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

MaybeApiError ReadBool(const Json& body, const char* key, bool* out) {
  if (!HasValue(body, key)) return std::nullopt;
  const Json& v = body[key];
  if (!v.is_boolean()) return WrongType(key, "true or false", v);
  *out = v.get<bool>();
  return std::nullopt;
}

MaybeApiError ReadString(const Json& body, const char* key,
                         std::optional<std::string>* out) {
  if (!HasValue(body, key)) return std::nullopt;
  const Json& v = body[key];
  if (!v.is_string()) return WrongType(key, "a string", v);
  *out = v.get<std::string>();
  return std::nullopt;
}

MaybeApiError ReadNumber(const Json& body, const char* key,
                         std::optional<double>* out) {
  if (!HasValue(body, key)) return std::nullopt;
  const Json& v = body[key];
  if (!v.is_number()) return WrongType(key, "a number", v);
  const double d = v.get<double>();
  if (!std::isfinite(d)) return WrongType(key, "a finite number", v);
  *out = d;
  return std::nullopt;
}

namespace {

// An integral JSON value as int64, or nullopt.
std::optional<int64_t> AsInt64(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return int64_t(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15) {
      return int64_t(d);
    }
  }
  return std::nullopt;
}

}  // namespace

MaybeApiError ReadInteger(const Json& body, const char* key,
                          std::optional<int64_t>* out) {
  if (!HasValue(body, key)) return std::nullopt;
  const Json& v = body[key];
  auto value = AsInt64(v);
  if (!value) return WrongType(key, "an integer", v);
  *out = *value;
  return std::nullopt;
}

MaybeApiError ReadTokenId(const Json& value, const std::string& param,
                          int32_t* out) {
  auto id = AsInt64(value);
  if (!id) return WrongType(param, "an integer token id", value);
  if (*id < 0 || *id > std::numeric_limits<int32_t>::max()) {
    return BadRequest(
        fmt::format("'{}' = {} is not a token id (ids are >= 0)", param, *id),
        param);
  }
  *out = static_cast<int32_t>(*id);
  return std::nullopt;
}

MaybeApiError ReadTokenIds(const Json& value, const std::string& param,
                           std::vector<int32_t>* out) {
  if (!value.is_array()) {
    return WrongType(param, "an array of integer token ids", value);
  }
  out->clear();
  out->reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    int32_t id = 0;
    TSR_RETURN_IF_API_ERROR(
        ReadTokenId(value[i], fmt::format("{}[{}]", param, i), &id));
    out->push_back(id);
  }
  return std::nullopt;
}

MaybeApiError ReadStringOrList(const Json& body, const char* key,
                               std::vector<std::string>* out) {
  if (!HasValue(body, key)) return std::nullopt;
  const Json& v = body[key];
  out->clear();
  if (v.is_string()) {
    out->push_back(v.get<std::string>());
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_string()) {
        return WrongType(fmt::format("{}[{}]", key, i), "a string", v[i]);
      }
      out->push_back(v[i].get<std::string>());
    }
  } else {
    return WrongType(key, "a string or an array of strings", v);
  }
  for (const std::string& s : *out) {
    if (s.empty()) {
      return BadRequest(
          fmt::format("'{}' must not contain an empty string", key), key);
    }
  }
  return std::nullopt;
}

MaybeApiError RejectUnknownFields(const Json& body,
                                  std::initializer_list<const char*> known,
                                  std::string_view what,
                                  std::span<const char* const> also_known) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool found = false;
    for (const char* k : known) found = found || it.key() == k;
    for (const char* k : also_known) found = found || it.key() == k;
    if (!found) {
      return BadRequest(
          fmt::format("'{}' is not a field of a {} request (check its "
                      "spelling; docs/API.md lists the fields)",
                      it.key(), what),
          it.key());
    }
  }
  return std::nullopt;
}

}  // namespace tessera::server
