// Regular expressions (the subset JSON Schema patterns and SGLang's `regex`
// field use) translated to an EBNF expression (ebnf.h) matching the same
// strings in full: literals (UTF-8), `.`, classes [a-z] [^...] with \d \w
// \s inside, escapes (\d \D \w \W \s \S \n \t \r \f \v \xHH \uHHHH and
// escaped punctuation), groups ( ) (?: ) (?<name> ), alternation |,
// quantifiers * + ? {m} {m,} {m,n} (lazy and possessive suffixes read as
// greedy: a whole-string match is the same). `^` at the start and `$` at
// the end are accepted (the match is always whole). Backreferences,
// lookaround, \b and other anchors are refused (INVALID_ARGUMENT naming
// them): they are not context-free.
//
// `inside_json_string`: the expression describes the contents of a JSON
// string (a JSON Schema "pattern"): `.` and negated classes exclude '"',
// '\' and control characters, and a literal '"' or '\' is written escaped.
#ifndef TESSERA_GRAMMAR_REGEX_TO_EBNF_H_
#define TESSERA_GRAMMAR_REGEX_TO_EBNF_H_

#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera::grammar {

StatusOr<std::string> RegexToEbnf(std::string_view regex,
                                  bool inside_json_string = false);

// A string as an EBNF literal ("..." with escapes).
std::string EbnfLiteral(std::string_view bytes);

}  // namespace tessera::grammar

#endif  // TESSERA_GRAMMAR_REGEX_TO_EBNF_H_
