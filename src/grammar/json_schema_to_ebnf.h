// JSON Schema (the draft-07 / 2020-12 subset real schemas use) and "any
// JSON value" (OpenAI's json_object) translated to an EBNF grammar (ebnf.h)
// whose sentences are exactly the JSON texts valid against the schema.
//
// Supported: type (one or a list), properties / required /
// additionalProperties (false by default when properties are given, as
// OpenAI's strict mode; true or a schema allows extra keys after the
// declared ones), minProperties 0/1, enum, const, items (a schema, or the
// draft-04 list with additionalItems) / prefixItems / minItems / maxItems,
// anyOf, oneOf (only when no value can match two branches: different
// types, disjoint enums, a required key the other forbids, or closed
// objects with disjoint keys, which then both exclude {}), allOf (of one
// schema), $ref to
// #/$defs/... or #/definitions/... (recursion included), string
// minLength / maxLength / pattern (regex_to_ebnf.h) / format (date,
// time, date-time, email, uuid, ipv4, uri), integer minimum / maximum /
// exclusiveMinimum / exclusiveMaximum, number (bounds other than >= 0
// refused). Annotations are ignored (title, description, default,
// examples, $schema, $id, $comment, deprecated, readOnly, writeOnly,
// strict, name). Any other keyword is INVALID_ARGUMENT naming it and its
// path ("unsupported JSON Schema keyword 'not' at #/properties/a"), never
// silently ignored. Objects are written with their properties in the
// schema's order; whitespace between tokens is one space, or one newline
// and an indentation of up to 20 spaces, so a model cannot pad for ever.
#ifndef TESSERA_GRAMMAR_JSON_SCHEMA_TO_EBNF_H_
#define TESSERA_GRAMMAR_JSON_SCHEMA_TO_EBNF_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace tessera::grammar {

StatusOr<std::string> JsonSchemaToEbnf(const nlohmann::ordered_json& schema);

// For grammars that embed several schemas: the schema's rules only, named
// with `prefix` (its start rule is `<prefix>root`), without the shared JSON
// rules (JsonBaseEbnf, to be added once).
StatusOr<std::string> JsonSchemaRulesEbnf(const nlohmann::ordered_json& schema,
                                          const std::string& prefix);
// The shared JSON rules: ws, json-value, json-object, json-string, ...
std::string JsonBaseEbnf();
// Any JSON object (OpenAI's response_format {"type": "json_object"}).
std::string AnyJsonObjectEbnf();

}  // namespace tessera::grammar

#endif  // TESSERA_GRAMMAR_JSON_SCHEMA_TO_EBNF_H_
