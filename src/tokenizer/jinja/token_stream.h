// TokenStream: the cursor both parsers share over a token list, with the
// look-ahead, matching and "expected X, got Y" helpers they use.
//
// Not thread-safe; one per parse. The token list must end with kEnd and
// outlive the stream.
#ifndef TESSERA_TOKENIZER_JINJA_TOKEN_STREAM_H_
#define TESSERA_TOKENIZER_JINJA_TOKEN_STREAM_H_

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/jinja/lexer.h"
#include "tokenizer/jinja/operations.h"

namespace tessera::jinja {

// How a token reads in an error message.
inline std::string Describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kText:
      return "template text";
    case TokenKind::kVariableBegin:
      return "'{{'";
    case TokenKind::kVariableEnd:
      return "'}}'";
    case TokenKind::kBlockBegin:
      return "'{%'";
    case TokenKind::kBlockEnd:
      return "'%}'";
    case TokenKind::kName:
      return fmt::format("'{}'", t.text);
    case TokenKind::kString:
      return "a string";
    case TokenKind::kInteger:
      return "an integer";
    case TokenKind::kFloat:
      return "a float";
    case TokenKind::kOperator:
      return fmt::format("'{}'", t.text);
    case TokenKind::kEnd:
      return "the end of the template";
  }
  return "?";
}

class TokenStream {
 public:
  explicit TokenStream(const std::vector<Token>& tokens) : tokens_(tokens) {}

  const Token& Cur() const { return tokens_[pos_]; }
  const Token& Peek(size_t k) const {
    return tokens_[std::min(pos_ + k, tokens_.size() - 1)];
  }
  void Next() {
    if (pos_ + 1 < tokens_.size()) ++pos_;
  }
  bool IsOp(std::string_view op) const {
    return Cur().kind == TokenKind::kOperator && Cur().text == op;
  }
  bool IsName(std::string_view name) const {
    return Cur().kind == TokenKind::kName && Cur().text == name;
  }
  bool SkipOp(std::string_view op) {
    if (!IsOp(op)) return false;
    Next();
    return true;
  }
  bool SkipName(std::string_view name) {
    if (!IsName(name)) return false;
    Next();
    return true;
  }
  Status Unexpected(std::string_view expected) const {
    return TemplateError(Cur().line, fmt::format("expected {}, got {}",
                                                 expected, Describe(Cur())));
  }
  Status ExpectOp(std::string_view op) {
    if (!SkipOp(op)) return Unexpected(fmt::format("'{}'", op));
    return OkStatus();
  }
  Status ExpectBlockEnd() {
    if (Cur().kind != TokenKind::kBlockEnd) return Unexpected("'%}'");
    Next();
    return OkStatus();
  }
  StatusOr<std::string> ExpectName(std::string_view what) {
    if (Cur().kind != TokenKind::kName) return Unexpected(what);
    std::string name = Cur().text;
    Next();
    return name;
  }

 private:
  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
};

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_TOKEN_STREAM_H_
