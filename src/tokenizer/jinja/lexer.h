// Lexer of the Jinja engine: template source -> tokens, with Jinja's
// whitespace control applied to the text between tags.
//
// It follows Jinja 3's lexer: `{{ }}`, `{% %}`, `{# #}` delimiters; `-` on a
// delimiter strips all whitespace on that side, `+` keeps it; trim_blocks
// drops the first newline after a block or comment tag; lstrip_blocks drops
// the spaces and tabs between a line start and a block or comment tag; tag
// ends are recognised only where brackets balance (`{{ {'a': {}} }}`);
// `{% raw %}` bodies pass through as text; "\r\n" and "\r" become "\n" and one
// trailing newline of the template is dropped (keep_trailing_newline=False).
// Comments produce no token. Pure function; thread-safe.
#ifndef TESSERA_TOKENIZER_JINJA_LEXER_H_
#define TESSERA_TOKENIZER_JINJA_LEXER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::jinja {

enum class TokenKind {
  kText,           // literal template text (whitespace control applied)
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,           // identifier or keyword
  kString,         // text holds the unescaped value
  kInteger,        // int_value
  kFloat,          // float_value
  kOperator,       // text holds the operator: + - * / // % ** ~ == != ...
  kEnd,            // end of the template
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;
};

// Hugging Face's chat template environment sets both; Jinja's own default is
// off for both.
struct LexerOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// The token list always ends with a kEnd token. Errors name the line.
StatusOr<std::vector<Token>> Tokenize(std::string_view source,
                                      const LexerOptions& options);

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_LEXER_H_
