// Bounded JSON parsing for everything that comes from outside the process:
// request bodies, config.json, tokenizer.json, tokenizer_config.json,
// safetensors headers, GGUF metadata, server replies read by the bench client.
//
// nlohmann's own DOM parser is iterative, but much of what walks a parsed
// document afterwards is not (dump(), the chat template's value conversion,
// the tokenizer's component builders): a document nested 100,000 deep parses
// and then overflows the stack. And nlohmann::ordered_json inserts each key
// with a linear search, so an object with n keys parses in O(n^2).
// ParseBoundedJson closes both holes in one pass:
//   - nesting deeper than `max_depth` (objects and arrays) is an error found
//     while parsing, before anything recurses over the document;
//   - an object with more than `max_object_keys` members is an error;
//   - ordered objects are built with a hash index, so parsing is linear in
//     the input whatever the key count (duplicate keys: the last one wins, as
//     with nlohmann, unless `reject_duplicate_keys`);
//   - number overflow ("1e400") is a parse error like any other, never an
//     exception that escapes.
// Thread-safe: pure functions.
#ifndef TESSERA_BASE_BOUNDED_JSON_H_
#define TESSERA_BASE_BOUNDED_JSON_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "base/status.h"

namespace tessera {

// The depth every recursive walker of outside JSON may assume.
inline constexpr size_t kMaxJsonDepth = 512;

struct JsonLimits {
  size_t max_depth = kMaxJsonDepth;
  size_t max_object_keys = size_t{1} << 20;
  bool reject_duplicate_keys = false;
};

// Why a parse failed; `byte` is the offset where it was found.
struct JsonParseError {
  enum class Kind { kSyntax, kTooDeep, kTooManyKeys, kDuplicateKey };
  Kind kind = Kind::kSyntax;
  size_t byte = 0;
};

// Parses `text` as one JSON document within `limits`. Errors are
// InvalidArgument: nlohmann's message for a syntax error, or one naming the
// limit that was exceeded ("nested deeper than 512 levels"). `error`, when
// given, receives the kind and byte offset of a failure.
StatusOr<nlohmann::json> ParseBoundedJson(std::string_view text,
                                          const JsonLimits& limits = {},
                                          JsonParseError* error = nullptr);
StatusOr<nlohmann::ordered_json> ParseBoundedOrderedJson(
    std::string_view text, const JsonLimits& limits = {},
    JsonParseError* error = nullptr);

}  // namespace tessera

#endif  // TESSERA_BASE_BOUNDED_JSON_H_
