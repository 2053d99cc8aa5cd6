// Python's json.dumps over engine Values: the output of Hugging Face's
// `tojson` filter, byte for byte.
//
// Hugging Face replaces Jinja's tojson with
// json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False): keys stay in insertion order, separators are ", " and
// ": " (or "," and ": " once an indent is given), nothing is HTML-escaped and
// UTF-8 passes through. Floats print as Python's repr; NaN and infinities as
// NaN / Infinity. Pure functions; thread-safe.
#ifndef TESSERA_TOKENIZER_JINJA_JSON_DUMP_H_
#define TESSERA_TOKENIZER_JINJA_JSON_DUMP_H_

#include <optional>
#include <string>

#include "base/status.h"
#include "tokenizer/jinja/value.h"

namespace tessera::jinja {

struct JsonDumpOptions {
  // nullopt: one line. Otherwise each item on its own line, indented by this
  // string per level (json.dumps turns an int indent into that many spaces).
  std::optional<std::string> indent;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX (surrogate pairs)
};

// Fails (naming `line`) for values JSON cannot hold: Undefined, functions,
// namespaces.
StatusOr<std::string> JsonDumps(const Value& value,
                                const JsonDumpOptions& options, int line);

// A JSON string literal with json.dumps' escaping.
std::string JsonQuote(const std::string& s, bool ensure_ascii);

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_JSON_DUMP_H_
