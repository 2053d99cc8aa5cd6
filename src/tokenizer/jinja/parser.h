// Parser of the Jinja engine: tokens -> syntax tree, with Jinja 3's grammar.
// This file parses statements; expression_parser.h parses expressions.
//
// Statements: if/elif/else, for (tuple targets, `if` filter, else), set
// (names, tuples, namespace attributes, block form with filters), macro,
// call blocks, filter blocks, with, break/continue, print, and Hugging Face's
// {% generation %} (rendered in place). Tags that need a template loader
// (include, import, extends, block) or that Hugging Face does not enable are
// errors naming the tag and line. Pure function; thread-safe.
#ifndef TESSERA_TOKENIZER_JINJA_PARSER_H_
#define TESSERA_TOKENIZER_JINJA_PARSER_H_

#include <vector>

#include "base/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/lexer.h"

namespace tessera::jinja {

StatusOr<Body> Parse(const std::vector<Token>& tokens);

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_PARSER_H_
