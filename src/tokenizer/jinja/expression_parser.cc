#include "tokenizer/jinja/expression_parser.h"

#include <fmt/format.h>

namespace tessera::jinja {
namespace {

// Deeper nesting than this is refused rather than risking the stack.
constexpr int kMaxDepth = 200;

ExprPtr NewExpr(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

}  // namespace

StatusOr<ExprPtr> ExpressionParser::ParseTuple(bool with_condexpr,
                                               bool explicit_parens) {
  const int line = ts_.Cur().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) {
      if (!ts_.SkipOp(",")) break;
      is_tuple = true;
    }
    if (AtTupleEnd()) break;
    TSR_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(with_condexpr));
    items.push_back(std::move(item));
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items.front());
    if (!explicit_parens) return ts_.Unexpected("an expression");
  }
  auto t = NewExpr(Expr::Kind::kTuple, line);
  t->operands = std::move(items);
  return t;
}

bool ExpressionParser::AtTupleEnd() const {
  const Token& t = ts_.Cur();
  return t.kind == TokenKind::kVariableEnd || t.kind == TokenKind::kBlockEnd ||
         t.kind == TokenKind::kEnd ||
         (t.kind == TokenKind::kOperator && t.text == ")");
}

StatusOr<ExprPtr> ExpressionParser::ParseExpression(bool with_condexpr) {
  if (++depth_ > kMaxDepth) {
    return TemplateError(ts_.Cur().line, "expression is nested too deeply");
  }
  StatusOr<ExprPtr> e = with_condexpr ? ParseCondExpr() : ParseOr();
  --depth_;
  return e;
}

StatusOr<ExprPtr> ExpressionParser::ParseCondExpr() {
  TSR_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
  while (ts_.IsName("if")) {
    const int line = ts_.Cur().line;
    ts_.Next();
    auto cond = NewExpr(Expr::Kind::kCondition, line);
    TSR_ASSIGN_OR_RETURN(ExprPtr test, ParseOr());
    ExprPtr otherwise;
    if (ts_.SkipName("else")) {
      TSR_ASSIGN_OR_RETURN(otherwise, ParseCondExpr());
    }
    cond->operands.push_back(std::move(test));
    cond->operands.push_back(std::move(expr));
    cond->operands.push_back(std::move(otherwise));
    expr = std::move(cond);
  }
  return expr;
}

StatusOr<ExprPtr> ExpressionParser::ParseOr() {
  TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
  while (ts_.IsName("or")) {
    const int line = ts_.Cur().line;
    ts_.Next();
    TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
    left = Pair(Expr::Kind::kOr, line, std::move(left), std::move(right));
  }
  return left;
}

StatusOr<ExprPtr> ExpressionParser::ParseAnd() {
  TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
  while (ts_.IsName("and")) {
    const int line = ts_.Cur().line;
    ts_.Next();
    TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
    left = Pair(Expr::Kind::kAnd, line, std::move(left), std::move(right));
  }
  return left;
}

StatusOr<ExprPtr> ExpressionParser::ParseNot() {
  if (ts_.IsName("not")) {
    auto e = NewExpr(Expr::Kind::kNot, ts_.Cur().line);
    ts_.Next();
    if (++depth_ > kMaxDepth) {
      return TemplateError(ts_.Cur().line, "expression is nested too deeply");
    }
    TSR_ASSIGN_OR_RETURN(ExprPtr x, ParseNot());
    --depth_;
    e->operands.push_back(std::move(x));
    return e;
  }
  return ParseCompare();
}

StatusOr<ExprPtr> ExpressionParser::ParseCompare() {
  const int line = ts_.Cur().line;
  TSR_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
  ExprPtr cmp;
  while (true) {
    CompareOp op;
    const Token& t = ts_.Cur();
    if (t.kind == TokenKind::kOperator && t.text == "==") {
      op = CompareOp::kEq;
    } else if (t.kind == TokenKind::kOperator && t.text == "!=") {
      op = CompareOp::kNe;
    } else if (t.kind == TokenKind::kOperator && t.text == "<") {
      op = CompareOp::kLt;
    } else if (t.kind == TokenKind::kOperator && t.text == "<=") {
      op = CompareOp::kLe;
    } else if (t.kind == TokenKind::kOperator && t.text == ">") {
      op = CompareOp::kGt;
    } else if (t.kind == TokenKind::kOperator && t.text == ">=") {
      op = CompareOp::kGe;
    } else if (ts_.IsName("in")) {
      op = CompareOp::kIn;
    } else if (ts_.IsName("not") && ts_.Peek(1).kind == TokenKind::kName &&
               ts_.Peek(1).text == "in") {
      ts_.Next();
      op = CompareOp::kNotIn;
    } else {
      break;
    }
    ts_.Next();
    if (!cmp) {
      cmp = NewExpr(Expr::Kind::kCompare, line);
      cmp->operands.push_back(std::move(first));
    }
    TSR_ASSIGN_OR_RETURN(ExprPtr operand, ParseMath1());
    cmp->operands.push_back(std::move(operand));
    cmp->compare_ops.push_back(op);
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr ExpressionParser::Pair(Expr::Kind kind, int line, ExprPtr a,
                               ExprPtr b) {
  auto e = NewExpr(kind, line);
  e->operands.push_back(std::move(a));
  e->operands.push_back(std::move(b));
  return e;
}

ExprPtr ExpressionParser::Binary(BinaryOp op, int line, ExprPtr a, ExprPtr b) {
  auto e = Pair(Expr::Kind::kBinary, line, std::move(a), std::move(b));
  e->op = op;
  return e;
}

StatusOr<ExprPtr> ExpressionParser::ParseMath1() {
  TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
  while (ts_.IsOp("+") || ts_.IsOp("-")) {
    const BinaryOp op = ts_.IsOp("+") ? BinaryOp::kAdd : BinaryOp::kSub;
    const int line = ts_.Cur().line;
    ts_.Next();
    TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
    left = Binary(op, line, std::move(left), std::move(right));
  }
  return left;
}

StatusOr<ExprPtr> ExpressionParser::ParseConcat() {
  TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseMath2());
  while (ts_.IsOp("~")) {
    const int line = ts_.Cur().line;
    ts_.Next();
    TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseMath2());
    left = Binary(BinaryOp::kConcat, line, std::move(left), std::move(right));
  }
  return left;
}

StatusOr<ExprPtr> ExpressionParser::ParseMath2() {
  TSR_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
  while (true) {
    BinaryOp op;
    if (ts_.IsOp("*")) {
      op = BinaryOp::kMul;
    } else if (ts_.IsOp("/")) {
      op = BinaryOp::kDiv;
    } else if (ts_.IsOp("//")) {
      op = BinaryOp::kFloorDiv;
    } else if (ts_.IsOp("%")) {
      op = BinaryOp::kMod;
    } else {
      break;
    }
    const int line = ts_.Cur().line;
    ts_.Next();
    TSR_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
    left = Binary(op, line, std::move(left), std::move(right));
  }
  return left;
}

// Left-associative, as in Jinja (2 ** 3 ** 2 == 64).
StatusOr<ExprPtr> ExpressionParser::ParsePow() {
  TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
  while (ts_.IsOp("**")) {
    const int line = ts_.Cur().line;
    ts_.Next();
    TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
    left = Binary(BinaryOp::kPow, line, std::move(left), std::move(right));
  }
  return left;
}

StatusOr<ExprPtr> ExpressionParser::ParseUnary(bool with_filter) {
  if (++depth_ > kMaxDepth) {
    return TemplateError(ts_.Cur().line, "expression is nested too deeply");
  }
  ExprPtr node;
  if (ts_.IsOp("-") || ts_.IsOp("+")) {
    node = NewExpr(ts_.IsOp("-") ? Expr::Kind::kNeg : Expr::Kind::kPos,
                   ts_.Cur().line);
    ts_.Next();
    TSR_ASSIGN_OR_RETURN(ExprPtr x, ParseUnary(false));
    node->operands.push_back(std::move(x));
  } else {
    TSR_ASSIGN_OR_RETURN(node, ParsePrimary());
  }
  TSR_ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
  if (with_filter) {
    TSR_ASSIGN_OR_RETURN(node, ParseFilterChain(std::move(node)));
  }
  --depth_;
  return node;
}

StatusOr<ExprPtr> ExpressionParser::ParsePrimary() {
  const Token& t = ts_.Cur();
  const int line = t.line;
  switch (t.kind) {
    case TokenKind::kName: {
      auto e = NewExpr(Expr::Kind::kLiteral, line);
      if (t.text == "true" || t.text == "True") {
        e->value = Value(true);
      } else if (t.text == "false" || t.text == "False") {
        e->value = Value(false);
      } else if (t.text == "none" || t.text == "None") {
        e->value = Value::None();
      } else {
        e->kind = Expr::Kind::kName;
        e->name = t.text;
        if (macro_ != nullptr) {
          if (t.text == "varargs") macro_->uses_varargs = true;
          if (t.text == "kwargs") macro_->uses_kwargs = true;
        }
      }
      ts_.Next();
      return e;
    }
    case TokenKind::kString: {
      std::string s;
      while (ts_.Cur().kind == TokenKind::kString) {  // "a" "b" concatenates
        s += ts_.Cur().text;
        ts_.Next();
      }
      auto e = NewExpr(Expr::Kind::kLiteral, line);
      e->value = Value(std::move(s));
      return e;
    }
    case TokenKind::kInteger: {
      auto e = NewExpr(Expr::Kind::kLiteral, line);
      e->value = Value(t.int_value);
      ts_.Next();
      return e;
    }
    case TokenKind::kFloat: {
      auto e = NewExpr(Expr::Kind::kLiteral, line);
      e->value = Value(t.float_value);
      ts_.Next();
      return e;
    }
    case TokenKind::kOperator:
      if (t.text == "(") {
        ts_.Next();
        TSR_ASSIGN_OR_RETURN(ExprPtr e,
                             ParseTuple(true, /*explicit_parens=*/true));
        TSR_RETURN_IF_ERROR(ts_.ExpectOp(")"));
        return e;
      }
      if (t.text == "[") return ParseList();
      if (t.text == "{") return ParseDict();
      break;
    default:
      break;
  }
  return ts_.Unexpected("an expression");
}

StatusOr<ExprPtr> ExpressionParser::ParseList() {
  auto e = NewExpr(Expr::Kind::kList, ts_.Cur().line);
  ts_.Next();
  while (!ts_.IsOp("]")) {
    if (!e->operands.empty()) TSR_RETURN_IF_ERROR(ts_.ExpectOp(","));
    if (ts_.IsOp("]")) break;
    TSR_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
    e->operands.push_back(std::move(item));
  }
  ts_.Next();
  return e;
}

StatusOr<ExprPtr> ExpressionParser::ParseDict() {
  auto e = NewExpr(Expr::Kind::kDict, ts_.Cur().line);
  ts_.Next();
  while (!ts_.IsOp("}")) {
    if (!e->operands.empty()) TSR_RETURN_IF_ERROR(ts_.ExpectOp(","));
    if (ts_.IsOp("}")) break;
    TSR_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression(true));
    TSR_RETURN_IF_ERROR(ts_.ExpectOp(":"));
    TSR_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
    e->operands.push_back(std::move(key));
    e->operands.push_back(std::move(value));
  }
  ts_.Next();
  return e;
}

StatusOr<ExprPtr> ExpressionParser::ParsePostfix(ExprPtr node) {
  while (true) {
    const int line = ts_.Cur().line;
    if (ts_.IsOp(".")) {
      ts_.Next();
      if (ts_.Cur().kind == TokenKind::kName) {
        auto e = NewExpr(Expr::Kind::kGetAttr, line);
        e->name = ts_.Cur().text;
        e->operands.push_back(std::move(node));
        node = std::move(e);
      } else if (ts_.Cur().kind == TokenKind::kInteger) {  // x.0 is x[0]
        auto key = NewExpr(Expr::Kind::kLiteral, line);
        key->value = Value(ts_.Cur().int_value);
        node =
            Pair(Expr::Kind::kGetItem, line, std::move(node), std::move(key));
      } else {
        return ts_.Unexpected("an attribute name");
      }
      ts_.Next();
    } else if (ts_.IsOp("[")) {
      ts_.Next();
      TSR_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node), line));
    } else if (ts_.IsOp("(")) {
      TSR_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

StatusOr<ExprPtr> ExpressionParser::ParseSubscript(ExprPtr object, int line) {
  ExprPtr parts[3];
  bool is_slice = false;
  int part = 0;
  while (true) {
    if (ts_.IsOp(":")) {
      if (++part > 2) return ts_.Unexpected("']'");
      is_slice = true;
      ts_.Next();
      continue;
    }
    if (ts_.IsOp("]")) break;
    if (ts_.IsOp(",")) {
      return UnsupportedError(ts_.Cur().line,
                              "tuple subscripts (x[a, b]) are "
                              "not supported");
    }
    if (parts[part]) return ts_.Unexpected("']'");
    TSR_ASSIGN_OR_RETURN(parts[part], ParseExpression(true));
  }
  ts_.Next();
  if (!is_slice) {
    if (!parts[0]) return TemplateError(line, "empty subscript []");
    return Pair(Expr::Kind::kGetItem, line, std::move(object),
                std::move(parts[0]));
  }
  auto e = NewExpr(Expr::Kind::kSlice, line);
  e->operands.push_back(std::move(object));
  for (auto& p : parts) e->operands.push_back(std::move(p));
  return e;
}

// Parses "(args)" into e->operands (after any already there) and
// e->keyword.
Status ExpressionParser::ParseArgs(Expr* e) {
  TSR_RETURN_IF_ERROR(ts_.ExpectOp("("));
  bool first = true;
  while (!ts_.IsOp(")")) {
    if (!first) TSR_RETURN_IF_ERROR(ts_.ExpectOp(","));
    first = false;
    if (ts_.IsOp(")")) break;
    if (ts_.IsOp("*") || ts_.IsOp("**")) {
      return UnsupportedError(ts_.Cur().line,
                              "*args and **kwargs in calls are "
                              "not supported");
    }
    if (ts_.Cur().kind == TokenKind::kName &&
        ts_.Peek(1).kind == TokenKind::kOperator && ts_.Peek(1).text == "=") {
      std::string name = ts_.Cur().text;
      ts_.Next();
      ts_.Next();
      TSR_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
      e->keyword.emplace_back(std::move(name), std::move(value));
      continue;
    }
    if (!e->keyword.empty()) {
      return TemplateError(ts_.Cur().line,
                           "positional argument follows keyword argument");
    }
    TSR_ASSIGN_OR_RETURN(ExprPtr arg, ParseExpression(true));
    e->operands.push_back(std::move(arg));
  }
  ts_.Next();
  return OkStatus();
}

StatusOr<ExprPtr> ExpressionParser::ParseCall(ExprPtr callee) {
  auto e = NewExpr(Expr::Kind::kCall, ts_.Cur().line);
  e->operands.push_back(std::move(callee));
  TSR_RETURN_IF_ERROR(ParseArgs(e.get()));
  return e;
}

// After '|': name [(args)]. `input` may be null (filter blocks).
StatusOr<ExprPtr> ExpressionParser::ParseFilter(ExprPtr input) {
  auto e = NewExpr(Expr::Kind::kFilter, ts_.Cur().line);
  TSR_ASSIGN_OR_RETURN(e->name, ts_.ExpectName("a filter name"));
  e->operands.push_back(std::move(input));
  if (ts_.IsOp("(")) TSR_RETURN_IF_ERROR(ParseArgs(e.get()));
  return e;
}

StatusOr<ExprPtr> ExpressionParser::ParseFilterChain(ExprPtr node) {
  while (true) {
    if (ts_.SkipOp("|")) {
      TSR_ASSIGN_OR_RETURN(node, ParseFilter(std::move(node)));
    } else if (ts_.IsName("is")) {
      TSR_ASSIGN_OR_RETURN(node, ParseTest(std::move(node)));
    } else if (ts_.IsOp("(")) {
      TSR_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

StatusOr<ExprPtr> ExpressionParser::ParseTest(ExprPtr input) {
  auto e = NewExpr(Expr::Kind::kTest, ts_.Cur().line);
  ts_.Next();  // is
  e->negated = ts_.SkipName("not");
  TSR_ASSIGN_OR_RETURN(e->name, ts_.ExpectName("a test name"));
  e->operands.push_back(std::move(input));
  const Token& t = ts_.Cur();
  if (ts_.IsOp("(")) {
    TSR_RETURN_IF_ERROR(ParseArgs(e.get()));
  } else if ((t.kind == TokenKind::kName && t.text != "else" &&
              t.text != "or" && t.text != "and") ||
             t.kind == TokenKind::kString || t.kind == TokenKind::kInteger ||
             t.kind == TokenKind::kFloat || ts_.IsOp("[") || ts_.IsOp("{")) {
    if (ts_.IsName("is")) {
      return TemplateError(t.line, "you cannot chain multiple tests with is");
    }
    TSR_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
    TSR_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
    e->operands.push_back(std::move(arg));
  }
  return e;
}

}  // namespace tessera::jinja
