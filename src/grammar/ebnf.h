// EBNF grammars in the GBNF dialect (llama.cpp's, which SGLang's `ebnf`
// field also takes) parsed into a Grammar (grammar.h).
//
//   root    ::= "{" ws pair ("," ws pair)* "}"   # comments run to line end
//   pair    ::= string ":" ws [0-9]+
//   string  ::= "\"" [^"\\]* "\""
//   ws      ::= [ \t\n]*
//
// Rules are `name ::= alternatives`; names are [A-Za-z0-9_-]+ and may be
// used before they are defined. Elements: "literal" (escapes \n \r \t a backslash,
// \" \' \xHH \uHHHH \UHHHHHHHH; other bytes, UTF-8 included, as written),
// [character class] with ranges and [^negation] over code points, `.` (any
// code point), a rule name, ( group ). Postfix operators * + ? {m} {m,}
// {m,n}. Alternatives are separated by |; a rule may span lines.
// `root_rule` names the start rule ("root").
//
// Errors are INVALID_ARGUMENT naming the line and column, or the rule that
// is used but never defined.
#ifndef TESSERA_GRAMMAR_EBNF_H_
#define TESSERA_GRAMMAR_EBNF_H_

#include <memory>
#include <string_view>

#include "base/status.h"
#include "grammar/grammar.h"

namespace tessera::grammar {

// Most bytes of grammar text accepted (a request field).
inline constexpr size_t kMaxGrammarTextBytes = 1 << 20;

StatusOr<std::shared_ptr<const Grammar>> ParseEbnf(
    std::string_view text, std::string_view root_rule = "root");

}  // namespace tessera::grammar

#endif  // TESSERA_GRAMMAR_EBNF_H_
