// libFuzzer harness: structured-output constraints as clients send them —
// the first byte picks the kind (EBNF, regex, JSON Schema), the rest is its
// text — compiled as the server compiles them, then a matcher fed a few
// bytes and a token mask over a small vocabulary.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/earley_matcher.h"
#include "grammar/ebnf.h"
#include "grammar/json_schema_to_ebnf.h"
#include "grammar/regex_to_ebnf.h"
#include "grammar/token_mask.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1,
                              size - 1);
  tessera::StatusOr<std::shared_ptr<const tessera::grammar::Grammar>> g =
      tessera::InvalidArgumentError("unset");
  switch (data[0] % 3) {
    case 0:
      g = tessera::grammar::ParseEbnf(text);
      break;
    case 1: {
      auto expr = tessera::grammar::RegexToEbnf(text, data[0] & 4);
      if (!expr.ok()) return 0;
      g = tessera::grammar::ParseEbnf("root ::= " + *expr + "\n");
      break;
    }
    default: {
      const auto schema = nlohmann::ordered_json::parse(text, nullptr, false);
      if (schema.is_discarded()) return 0;
      auto ebnf = tessera::grammar::JsonSchemaToEbnf(schema);
      if (!ebnf.ok()) return 0;
      g = tessera::grammar::ParseEbnf(*ebnf);
      break;
    }
  }
  if (!g.ok()) return 0;
  static const auto vocab = tessera::grammar::TokenVocabulary::FromBytes(
      {"{", "}", "\"", "a", "ab", "1", "12", " ", ",", ":", "[", "]", "\"a\"",
       "true", "null", "-", ".", "x\"", ""});
  tessera::grammar::GrammarMatcher m(*g);
  std::vector<uint8_t> mask;
  const std::vector<int32_t> stop = {18};
  for (int step = 0; step < 8; ++step) {
    if (tessera::grammar::ComputeTokenMask(m, *vocab, stop, &mask) == 0) break;
    bool advanced = false;
    for (int32_t id = 0; id < 18 && !advanced; ++id) {
      if (mask[static_cast<size_t>(id)]) {
        advanced = m.AcceptString(vocab->bytes(id));
      }
    }
    if (!advanced) break;
  }
  return 0;
}
