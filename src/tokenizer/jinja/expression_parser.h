// ExpressionParser: Jinja expressions, with Jinja 3's operator precedence
// (lowest first): `x if c else y`, or, and, not, comparisons (== != < <= >
// >= in, not in), + -, ~, * / // %, ** (left-associative, as in Jinja),
// unary - +, then primaries with postfix `.attr`, `[index]`, `[a:b:c]`,
// `(args)` and `|filter` / `is test` chains.
//
// Not thread-safe; one per parse, sharing the statement parser's
// TokenStream.
#ifndef TESSERA_TOKENIZER_JINJA_EXPRESSION_PARSER_H_
#define TESSERA_TOKENIZER_JINJA_EXPRESSION_PARSER_H_

#include "base/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/token_stream.h"

namespace tessera::jinja {

class ExpressionParser {
 public:
  explicit ExpressionParser(TokenStream& ts) : ts_(ts) {}

  // Comma-separated expressions; more than one (or a trailing comma) makes a
  // tuple. `with_condexpr` false leaves a trailing `if` to the caller (for
  // loop filters); `explicit_parens`: inside (...), where () is the empty
  // tuple.
  StatusOr<ExprPtr> ParseTuple(bool with_condexpr = true,
                               bool explicit_parens = false);
  StatusOr<ExprPtr> ParseExpression(bool with_condexpr);
  StatusOr<ExprPtr> ParseFilter(ExprPtr input);

  // The macro (or call block) whose body is being parsed, or null; a name
  // `varargs` / `kwargs` read inside it marks it as taking extra arguments.
  void set_macro(Stmt* macro) { macro_ = macro; }

 private:
  bool AtTupleEnd() const;
  StatusOr<ExprPtr> ParseCondExpr();
  StatusOr<ExprPtr> ParseOr();
  StatusOr<ExprPtr> ParseAnd();
  StatusOr<ExprPtr> ParseNot();
  StatusOr<ExprPtr> ParseCompare();
  ExprPtr Pair(Expr::Kind kind, int line, ExprPtr a, ExprPtr b);
  ExprPtr Binary(BinaryOp op, int line, ExprPtr a, ExprPtr b);
  StatusOr<ExprPtr> ParseMath1();
  StatusOr<ExprPtr> ParseConcat();
  StatusOr<ExprPtr> ParseMath2();
  StatusOr<ExprPtr> ParsePow();
  StatusOr<ExprPtr> ParseUnary(bool with_filter);
  StatusOr<ExprPtr> ParsePrimary();
  StatusOr<ExprPtr> ParseList();
  StatusOr<ExprPtr> ParseDict();
  StatusOr<ExprPtr> ParsePostfix(ExprPtr node);
  StatusOr<ExprPtr> ParseSubscript(ExprPtr object, int line);
  Status ParseArgs(Expr* e);
  StatusOr<ExprPtr> ParseCall(ExprPtr callee);
  StatusOr<ExprPtr> ParseFilterChain(ExprPtr node);
  StatusOr<ExprPtr> ParseTest(ExprPtr input);

  TokenStream& ts_;
  Stmt* macro_ = nullptr;
  int depth_ = 0;
};

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_EXPRESSION_PARSER_H_
