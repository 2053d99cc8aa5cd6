#include "tokenizer/jinja/parser.h"

#include <fmt/format.h>

#include <initializer_list>
#include <string_view>

namespace tessera::jinja {
namespace {

// Deeper nesting than this is refused rather than risking the stack.
constexpr int kMaxDepth = 200;

std::string Describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::kText: return "template text";
    case TokenKind::kVariableBegin: return "'{{'";
    case TokenKind::kVariableEnd: return "'}}'";
    case TokenKind::kBlockBegin: return "'{%'";
    case TokenKind::kBlockEnd: return "'%}'";
    case TokenKind::kName: return fmt::format("'{}'", t.text);
    case TokenKind::kString: return "a string";
    case TokenKind::kInteger: return "an integer";
    case TokenKind::kFloat: return "a float";
    case TokenKind::kOperator: return fmt::format("'{}'", t.text);
    case TokenKind::kEnd: return "the end of the template";
  }
  return "?";
}

ExprPtr NewExpr(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

  StatusOr<Body> ParseTemplate() {
    Body body;
    TSR_RETURN_IF_ERROR(ParseBody({}, &body));
    return body;
  }

 private:
  // ---- token helpers ----
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

  // ---- statements ----

  // Parses nodes until `{% name %}` with name in `end_tags` (left unconsumed,
  // positioned at the name) or the end of the template.
  Status ParseBody(std::initializer_list<std::string_view> end_tags,
                   Body* body) {
    while (true) {
      const Token& t = Cur();
      switch (t.kind) {
        case TokenKind::kEnd:
          return OkStatus();
        case TokenKind::kText: {
          auto s = std::make_unique<Stmt>();
          s->kind = Stmt::Kind::kText;
          s->line = t.line;
          s->text = t.text;
          body->push_back(std::move(s));
          Next();
          break;
        }
        case TokenKind::kVariableBegin: {
          auto s = std::make_unique<Stmt>();
          s->kind = Stmt::Kind::kOutput;
          s->line = t.line;
          Next();
          TSR_ASSIGN_OR_RETURN(s->expr, ParseTuple());
          if (Cur().kind != TokenKind::kVariableEnd) return Unexpected("'}}'");
          Next();
          body->push_back(std::move(s));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& name = Peek(1);
          if (name.kind == TokenKind::kName) {
            for (std::string_view end : end_tags) {
              if (name.text == end) {
                Next();  // leave the name current
                return OkStatus();
              }
            }
            if (name.text.rfind("end", 0) == 0 || name.text == "elif" ||
                name.text == "else") {
              if (end_tags.size() == 0) {
                return TemplateError(
                    name.line, fmt::format("unexpected '{}': no open block "
                                           "ends here",
                                           name.text));
              }
              return TemplateError(
                  name.line, fmt::format("unexpected '{}'; expected '{}'",
                                         name.text, *(end_tags.end() - 1)));
            }
          }
          Next();
          TSR_RETURN_IF_ERROR(ParseStatement(body));
          break;
        }
        default:
          return Unexpected("template text or a tag");
      }
    }
  }

  // Parses the body of a block whose opening tag has been read, up to and
  // including `{% end_tag %}`.
  Status ParseBlockBody(std::string_view opener, int open_line,
                        std::string_view end_tag, Body* body) {
    TSR_RETURN_IF_ERROR(ParseBody({end_tag}, body));
    if (!SkipName(end_tag)) {
      return TemplateError(open_line,
                           fmt::format("'{}' block is never closed with "
                                       "'{{% {} %}}'",
                                       opener, end_tag));
    }
    return ExpectBlockEnd();
  }

  Status ParseStatement(Body* body) {
    if (Cur().kind != TokenKind::kName) return Unexpected("a tag name");
    if (++depth_ > kMaxDepth) {
      return TemplateError(Cur().line, "blocks are nested too deeply");
    }
    const std::string tag = Cur().text;
    const int line = Cur().line;
    Next();
    auto s = std::make_unique<Stmt>();
    s->line = line;
    Status status;
    if (tag == "if") {
      status = ParseIf(s.get());
    } else if (tag == "for") {
      status = ParseFor(s.get());
    } else if (tag == "set") {
      status = ParseSet(s.get());
    } else if (tag == "macro") {
      status = ParseMacro(s.get());
    } else if (tag == "call") {
      status = ParseCallBlock(s.get());
    } else if (tag == "filter") {
      status = ParseFilterBlock(s.get());
    } else if (tag == "with") {
      status = ParseWith(s.get());
    } else if (tag == "print") {
      s->kind = Stmt::Kind::kOutput;
      auto expr = ParseTuple();
      if (!expr.ok()) return expr.status();
      s->expr = std::move(expr).value();
      status = ExpectBlockEnd();
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) {
        return TemplateError(line, fmt::format("'{}' outside of a loop", tag));
      }
      s->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      status = ExpectBlockEnd();
    } else if (tag == "generation") {
      s->kind = Stmt::Kind::kScope;
      status = ExpectBlockEnd();
      if (status.ok()) {
        status = ParseBlockBody("generation", line, "endgeneration", &s->body);
      }
    } else if (tag == "include" || tag == "import" || tag == "from" ||
               tag == "extends" || tag == "block") {
      return UnsupportedError(
          line, fmt::format("tag '{}' is not supported: chat templates are a "
                            "single file and load no other templates",
                            tag));
    } else if (tag == "autoescape") {
      return UnsupportedError(line, "tag 'autoescape' is not supported");
    } else {
      return TemplateError(
          line, fmt::format("unknown tag '{}' (Hugging Face's chat template "
                            "environment does not define it)",
                            tag));
    }
    TSR_RETURN_IF_ERROR(status);
    --depth_;
    body->push_back(std::move(s));
    return OkStatus();
  }

  Status ParseIf(Stmt* s) {
    s->kind = Stmt::Kind::kIf;
    const int open_line = s->line;
    while (true) {
      TSR_ASSIGN_OR_RETURN(ExprPtr cond, ParseTuple(/*with_condexpr=*/false));
      TSR_RETURN_IF_ERROR(ExpectBlockEnd());
      Body body;
      TSR_RETURN_IF_ERROR(ParseBody({"elif", "else", "endif"}, &body));
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (SkipName("elif")) continue;
      if (SkipName("else")) {
        TSR_RETURN_IF_ERROR(ExpectBlockEnd());
        return ParseBlockBody("if", open_line, "endif", &s->else_body);
      }
      if (!SkipName("endif")) {
        return TemplateError(open_line,
                             "'if' block is never closed with '{% endif %}'");
      }
      return ExpectBlockEnd();
    }
  }

  Status ParseFor(Stmt* s) {
    s->kind = Stmt::Kind::kFor;
    TSR_ASSIGN_OR_RETURN(Target target, ParseAssignTarget(false, "in"));
    s->targets.push_back(std::move(target));
    if (!SkipName("in")) return Unexpected("'in'");
    TSR_ASSIGN_OR_RETURN(s->expr, ParseTuple(/*with_condexpr=*/false));
    if (SkipName("if")) {
      TSR_ASSIGN_OR_RETURN(s->condition, ParseExpression(true));
    }
    if (IsName("recursive")) {
      return UnsupportedError(Cur().line, "recursive for loops are not "
                                          "supported");
    }
    TSR_RETURN_IF_ERROR(ExpectBlockEnd());
    ++loop_depth_;
    Status status = ParseBody({"else", "endfor"}, &s->body);
    --loop_depth_;
    TSR_RETURN_IF_ERROR(status);
    if (SkipName("else")) {
      TSR_RETURN_IF_ERROR(ExpectBlockEnd());
      return ParseBlockBody("for", s->line, "endfor", &s->else_body);
    }
    if (!SkipName("endfor")) {
      return TemplateError(s->line,
                           "'for' block is never closed with '{% endfor %}'");
    }
    return ExpectBlockEnd();
  }

  Status ParseSet(Stmt* s) {
    TSR_ASSIGN_OR_RETURN(Target target, ParseAssignTarget(true, ""));
    s->targets.push_back(std::move(target));
    if (SkipOp("=")) {
      s->kind = Stmt::Kind::kSet;
      TSR_ASSIGN_OR_RETURN(s->expr, ParseTuple());
      return ExpectBlockEnd();
    }
    s->kind = Stmt::Kind::kSetBlock;
    while (SkipOp("|")) {
      TSR_ASSIGN_OR_RETURN(ExprPtr f, ParseFilter(nullptr));
      s->filters.push_back(std::move(f));
    }
    TSR_RETURN_IF_ERROR(ExpectBlockEnd());
    return ParseBlockBody("set", s->line, "endset", &s->body);
  }

  Status ParseParams(Stmt* s) {
    TSR_RETURN_IF_ERROR(ExpectOp("("));
    while (!IsOp(")")) {
      if (!s->params.empty()) TSR_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(")")) break;
      TSR_ASSIGN_OR_RETURN(std::string name, ExpectName("a parameter name"));
      ExprPtr def;
      if (SkipOp("=")) {
        TSR_ASSIGN_OR_RETURN(def, ParseExpression(true));
      } else if (!s->params.empty() && s->params.back().second) {
        return TemplateError(Cur().line,
                             "non-default argument follows default argument");
      }
      s->params.emplace_back(std::move(name), std::move(def));
    }
    Next();
    return OkStatus();
  }

  // Parses a macro-like body (macro or caller) with its own varargs/kwargs
  // tracking and no enclosing loop.
  Status ParseCallableBody(Stmt* s, std::string_view opener,
                           std::string_view end_tag) {
    macro_stack_.push_back(s);
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;
    Status status = ParseBlockBody(opener, s->line, end_tag, &s->body);
    loop_depth_ = saved_loop_depth;
    macro_stack_.pop_back();
    return status;
  }

  Status ParseMacro(Stmt* s) {
    s->kind = Stmt::Kind::kMacro;
    TSR_ASSIGN_OR_RETURN(s->name, ExpectName("a macro name"));
    TSR_RETURN_IF_ERROR(ParseParams(s));
    TSR_RETURN_IF_ERROR(ExpectBlockEnd());
    return ParseCallableBody(s, "macro", "endmacro");
  }

  Status ParseCallBlock(Stmt* s) {
    s->kind = Stmt::Kind::kCallBlock;
    if (IsOp("(")) TSR_RETURN_IF_ERROR(ParseParams(s));
    const int line = Cur().line;
    TSR_ASSIGN_OR_RETURN(s->expr, ParseExpression(true));
    if (s->expr->kind != Expr::Kind::kCall) {
      return TemplateError(line, "'call' expects a macro call");
    }
    TSR_RETURN_IF_ERROR(ExpectBlockEnd());
    return ParseCallableBody(s, "call", "endcall");
  }

  Status ParseFilterBlock(Stmt* s) {
    s->kind = Stmt::Kind::kFilterBlock;
    do {
      TSR_ASSIGN_OR_RETURN(ExprPtr f, ParseFilter(nullptr));
      s->filters.push_back(std::move(f));
    } while (SkipOp("|"));
    TSR_RETURN_IF_ERROR(ExpectBlockEnd());
    return ParseBlockBody("filter", s->line, "endfilter", &s->body);
  }

  Status ParseWith(Stmt* s) {
    s->kind = Stmt::Kind::kWith;
    while (Cur().kind != TokenKind::kBlockEnd) {
      if (!s->targets.empty()) TSR_RETURN_IF_ERROR(ExpectOp(","));
      TSR_ASSIGN_OR_RETURN(Target target, ParseAssignTarget(false, ""));
      TSR_RETURN_IF_ERROR(ExpectOp("="));
      TSR_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
      s->targets.push_back(std::move(target));
      s->values.push_back(std::move(value));
    }
    Next();
    return ParseBlockBody("with", s->line, "endwith", &s->body);
  }

  // A name, `name.attr` (namespaces, when allowed) or a tuple of names,
  // optionally in parentheses; stops before `stop_name` or `=`.
  StatusOr<Target> ParseAssignTarget(bool with_namespace,
                                     std::string_view stop_name) {
    const int line = Cur().line;
    if (with_namespace && Cur().kind == TokenKind::kName &&
        Peek(1).kind == TokenKind::kOperator && Peek(1).text == ".") {
      Target t;
      t.kind = Target::Kind::kNamespaceAttr;
      t.line = line;
      t.name = Cur().text;
      Next();
      Next();
      TSR_ASSIGN_OR_RETURN(t.attr, ExpectName("an attribute name"));
      return t;
    }
    Target tuple;
    tuple.kind = Target::Kind::kTuple;
    tuple.line = line;
    bool saw_comma = false;
    while (true) {
      Target item;
      if (SkipOp("(")) {
        TSR_ASSIGN_OR_RETURN(item, ParseAssignTarget(false, ""));
        TSR_RETURN_IF_ERROR(ExpectOp(")"));
      } else {
        item.kind = Target::Kind::kName;
        item.line = Cur().line;
        TSR_ASSIGN_OR_RETURN(item.name, ExpectName("a variable name"));
        if (item.name == "loop" && (loop_depth_ > 0 || stop_name == "in")) {
          return TemplateError(item.line, "cannot assign to the special loop "
                                          "variable 'loop' in a for loop");
        }
        if (item.name == "true" || item.name == "false" || item.name == "none" ||
            item.name == "True" || item.name == "False" || item.name == "None") {
          return TemplateError(item.line,
                               fmt::format("cannot assign to '{}'", item.name));
        }
      }
      tuple.items.push_back(std::move(item));
      if (!SkipOp(",")) break;
      saw_comma = true;
      if (Cur().kind != TokenKind::kName && !IsOp("(")) break;
      if (!stop_name.empty() && IsName(stop_name)) break;
    }
    if (!saw_comma) return std::move(tuple.items.front());
    return tuple;
  }

  // ---- expressions ----

  // Comma-separated expressions; more than one (or a trailing comma) makes a
  // tuple. `explicit_parens`: inside (...), where () is the empty tuple.
  StatusOr<ExprPtr> ParseTuple(bool with_condexpr = true,
                               bool explicit_parens = false) {
    const int line = Cur().line;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) {
        if (!SkipOp(",")) break;
        is_tuple = true;
      }
      if (AtTupleEnd()) break;
      TSR_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(with_condexpr));
      items.push_back(std::move(item));
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items.front());
      if (!explicit_parens) return Unexpected("an expression");
    }
    auto t = NewExpr(Expr::Kind::kTuple, line);
    t->operands = std::move(items);
    return t;
  }

  bool AtTupleEnd() const {
    const Token& t = Cur();
    return t.kind == TokenKind::kVariableEnd || t.kind == TokenKind::kBlockEnd ||
           t.kind == TokenKind::kEnd ||
           (t.kind == TokenKind::kOperator && t.text == ")");
  }

  StatusOr<ExprPtr> ParseExpression(bool with_condexpr) {
    if (++depth_ > kMaxDepth) {
      return TemplateError(Cur().line, "expression is nested too deeply");
    }
    StatusOr<ExprPtr> e = with_condexpr ? ParseCondExpr() : ParseOr();
    --depth_;
    return e;
  }

  StatusOr<ExprPtr> ParseCondExpr() {
    TSR_ASSIGN_OR_RETURN(ExprPtr expr, ParseOr());
    while (IsName("if")) {
      const int line = Cur().line;
      Next();
      auto cond = NewExpr(Expr::Kind::kCondition, line);
      TSR_ASSIGN_OR_RETURN(ExprPtr test, ParseOr());
      ExprPtr otherwise;
      if (SkipName("else")) {
        TSR_ASSIGN_OR_RETURN(otherwise, ParseCondExpr());
      }
      cond->operands.push_back(std::move(test));
      cond->operands.push_back(std::move(expr));
      cond->operands.push_back(std::move(otherwise));
      expr = std::move(cond);
    }
    return expr;
  }

  StatusOr<ExprPtr> ParseOr() {
    TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseAnd());
    while (IsName("or")) {
      const int line = Cur().line;
      Next();
      TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseAnd());
      left = Pair(Expr::Kind::kOr, line, std::move(left), std::move(right));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseAnd() {
    TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseNot());
    while (IsName("and")) {
      const int line = Cur().line;
      Next();
      TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseNot());
      left = Pair(Expr::Kind::kAnd, line, std::move(left), std::move(right));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseNot() {
    if (IsName("not")) {
      auto e = NewExpr(Expr::Kind::kNot, Cur().line);
      Next();
      if (++depth_ > kMaxDepth) {
        return TemplateError(Cur().line, "expression is nested too deeply");
      }
      TSR_ASSIGN_OR_RETURN(ExprPtr x, ParseNot());
      --depth_;
      e->operands.push_back(std::move(x));
      return e;
    }
    return ParseCompare();
  }

  StatusOr<ExprPtr> ParseCompare() {
    const int line = Cur().line;
    TSR_ASSIGN_OR_RETURN(ExprPtr first, ParseMath1());
    ExprPtr cmp;
    while (true) {
      CompareOp op;
      const Token& t = Cur();
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
      } else if (IsName("in")) {
        op = CompareOp::kIn;
      } else if (IsName("not") && Peek(1).kind == TokenKind::kName &&
                 Peek(1).text == "in") {
        Next();
        op = CompareOp::kNotIn;
      } else {
        break;
      }
      Next();
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

  ExprPtr Pair(Expr::Kind kind, int line, ExprPtr a, ExprPtr b) {
    auto e = NewExpr(kind, line);
    e->operands.push_back(std::move(a));
    e->operands.push_back(std::move(b));
    return e;
  }

  ExprPtr Binary(BinaryOp op, int line, ExprPtr a, ExprPtr b) {
    auto e = Pair(Expr::Kind::kBinary, line, std::move(a), std::move(b));
    e->op = op;
    return e;
  }

  StatusOr<ExprPtr> ParseMath1() {
    TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseConcat());
    while (IsOp("+") || IsOp("-")) {
      const BinaryOp op = IsOp("+") ? BinaryOp::kAdd : BinaryOp::kSub;
      const int line = Cur().line;
      Next();
      TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseConcat());
      left = Binary(op, line, std::move(left), std::move(right));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseConcat() {
    TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseMath2());
    while (IsOp("~")) {
      const int line = Cur().line;
      Next();
      TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseMath2());
      left = Binary(BinaryOp::kConcat, line, std::move(left), std::move(right));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseMath2() {
    TSR_ASSIGN_OR_RETURN(ExprPtr left, ParsePow());
    while (true) {
      BinaryOp op;
      if (IsOp("*")) {
        op = BinaryOp::kMul;
      } else if (IsOp("/")) {
        op = BinaryOp::kDiv;
      } else if (IsOp("//")) {
        op = BinaryOp::kFloorDiv;
      } else if (IsOp("%")) {
        op = BinaryOp::kMod;
      } else {
        break;
      }
      const int line = Cur().line;
      Next();
      TSR_ASSIGN_OR_RETURN(ExprPtr right, ParsePow());
      left = Binary(op, line, std::move(left), std::move(right));
    }
    return left;
  }

  // Left-associative, as in Jinja (2 ** 3 ** 2 == 64).
  StatusOr<ExprPtr> ParsePow() {
    TSR_ASSIGN_OR_RETURN(ExprPtr left, ParseUnary(true));
    while (IsOp("**")) {
      const int line = Cur().line;
      Next();
      TSR_ASSIGN_OR_RETURN(ExprPtr right, ParseUnary(true));
      left = Binary(BinaryOp::kPow, line, std::move(left), std::move(right));
    }
    return left;
  }

  StatusOr<ExprPtr> ParseUnary(bool with_filter) {
    if (++depth_ > kMaxDepth) {
      return TemplateError(Cur().line, "expression is nested too deeply");
    }
    ExprPtr node;
    if (IsOp("-") || IsOp("+")) {
      node = NewExpr(IsOp("-") ? Expr::Kind::kNeg : Expr::Kind::kPos,
                     Cur().line);
      Next();
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

  StatusOr<ExprPtr> ParsePrimary() {
    const Token& t = Cur();
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
          if (!macro_stack_.empty()) {
            if (t.text == "varargs") macro_stack_.back()->uses_varargs = true;
            if (t.text == "kwargs") macro_stack_.back()->uses_kwargs = true;
          }
        }
        Next();
        return e;
      }
      case TokenKind::kString: {
        std::string s;
        while (Cur().kind == TokenKind::kString) {  // "a" "b" concatenates
          s += Cur().text;
          Next();
        }
        auto e = NewExpr(Expr::Kind::kLiteral, line);
        e->value = Value(std::move(s));
        return e;
      }
      case TokenKind::kInteger: {
        auto e = NewExpr(Expr::Kind::kLiteral, line);
        e->value = Value(t.int_value);
        Next();
        return e;
      }
      case TokenKind::kFloat: {
        auto e = NewExpr(Expr::Kind::kLiteral, line);
        e->value = Value(t.float_value);
        Next();
        return e;
      }
      case TokenKind::kOperator:
        if (t.text == "(") {
          Next();
          TSR_ASSIGN_OR_RETURN(ExprPtr e, ParseTuple(true, /*explicit_parens=*/true));
          TSR_RETURN_IF_ERROR(ExpectOp(")"));
          return e;
        }
        if (t.text == "[") return ParseList();
        if (t.text == "{") return ParseDict();
        break;
      default:
        break;
    }
    return Unexpected("an expression");
  }

  StatusOr<ExprPtr> ParseList() {
    auto e = NewExpr(Expr::Kind::kList, Cur().line);
    Next();
    while (!IsOp("]")) {
      if (!e->operands.empty()) TSR_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp("]")) break;
      TSR_ASSIGN_OR_RETURN(ExprPtr item, ParseExpression(true));
      e->operands.push_back(std::move(item));
    }
    Next();
    return e;
  }

  StatusOr<ExprPtr> ParseDict() {
    auto e = NewExpr(Expr::Kind::kDict, Cur().line);
    Next();
    while (!IsOp("}")) {
      if (!e->operands.empty()) TSR_RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp("}")) break;
      TSR_ASSIGN_OR_RETURN(ExprPtr key, ParseExpression(true));
      TSR_RETURN_IF_ERROR(ExpectOp(":"));
      TSR_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
      e->operands.push_back(std::move(key));
      e->operands.push_back(std::move(value));
    }
    Next();
    return e;
  }

  StatusOr<ExprPtr> ParsePostfix(ExprPtr node) {
    while (true) {
      const int line = Cur().line;
      if (IsOp(".")) {
        Next();
        if (Cur().kind == TokenKind::kName) {
          auto e = NewExpr(Expr::Kind::kGetAttr, line);
          e->name = Cur().text;
          e->operands.push_back(std::move(node));
          node = std::move(e);
        } else if (Cur().kind == TokenKind::kInteger) {  // x.0 is x[0]
          auto key = NewExpr(Expr::Kind::kLiteral, line);
          key->value = Value(Cur().int_value);
          node = Pair(Expr::Kind::kGetItem, line, std::move(node), std::move(key));
        } else {
          return Unexpected("an attribute name");
        }
        Next();
      } else if (IsOp("[")) {
        Next();
        TSR_ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node), line));
      } else if (IsOp("(")) {
        TSR_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
      } else {
        return node;
      }
    }
  }

  StatusOr<ExprPtr> ParseSubscript(ExprPtr object, int line) {
    ExprPtr parts[3];
    bool is_slice = false;
    int part = 0;
    while (true) {
      if (IsOp(":")) {
        if (++part > 2) return Unexpected("']'");
        is_slice = true;
        Next();
        continue;
      }
      if (IsOp("]")) break;
      if (IsOp(",")) {
        return UnsupportedError(Cur().line, "tuple subscripts (x[a, b]) are "
                                            "not supported");
      }
      if (parts[part]) return Unexpected("']'");
      TSR_ASSIGN_OR_RETURN(parts[part], ParseExpression(true));
    }
    Next();
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
  Status ParseArgs(Expr* e) {
    TSR_RETURN_IF_ERROR(ExpectOp("("));
    bool first = true;
    while (!IsOp(")")) {
      if (!first) TSR_RETURN_IF_ERROR(ExpectOp(","));
      first = false;
      if (IsOp(")")) break;
      if (IsOp("*") || IsOp("**")) {
        return UnsupportedError(Cur().line, "*args and **kwargs in calls are "
                                            "not supported");
      }
      if (Cur().kind == TokenKind::kName && Peek(1).kind == TokenKind::kOperator &&
          Peek(1).text == "=") {
        std::string name = Cur().text;
        Next();
        Next();
        TSR_ASSIGN_OR_RETURN(ExprPtr value, ParseExpression(true));
        e->keyword.emplace_back(std::move(name), std::move(value));
        continue;
      }
      if (!e->keyword.empty()) {
        return TemplateError(Cur().line,
                             "positional argument follows keyword argument");
      }
      TSR_ASSIGN_OR_RETURN(ExprPtr arg, ParseExpression(true));
      e->operands.push_back(std::move(arg));
    }
    Next();
    return OkStatus();
  }

  StatusOr<ExprPtr> ParseCall(ExprPtr callee) {
    auto e = NewExpr(Expr::Kind::kCall, Cur().line);
    e->operands.push_back(std::move(callee));
    TSR_RETURN_IF_ERROR(ParseArgs(e.get()));
    return e;
  }

  // After '|': name [(args)]. `input` may be null (filter blocks).
  StatusOr<ExprPtr> ParseFilter(ExprPtr input) {
    auto e = NewExpr(Expr::Kind::kFilter, Cur().line);
    TSR_ASSIGN_OR_RETURN(e->name, ExpectName("a filter name"));
    e->operands.push_back(std::move(input));
    if (IsOp("(")) TSR_RETURN_IF_ERROR(ParseArgs(e.get()));
    return e;
  }

  StatusOr<ExprPtr> ParseFilterChain(ExprPtr node) {
    while (true) {
      if (SkipOp("|")) {
        TSR_ASSIGN_OR_RETURN(node, ParseFilter(std::move(node)));
      } else if (IsName("is")) {
        TSR_ASSIGN_OR_RETURN(node, ParseTest(std::move(node)));
      } else if (IsOp("(")) {
        TSR_ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
      } else {
        return node;
      }
    }
  }

  StatusOr<ExprPtr> ParseTest(ExprPtr input) {
    auto e = NewExpr(Expr::Kind::kTest, Cur().line);
    Next();  // is
    e->negated = SkipName("not");
    TSR_ASSIGN_OR_RETURN(e->name, ExpectName("a test name"));
    e->operands.push_back(std::move(input));
    const Token& t = Cur();
    if (IsOp("(")) {
      TSR_RETURN_IF_ERROR(ParseArgs(e.get()));
    } else if ((t.kind == TokenKind::kName && t.text != "else" &&
                t.text != "or" && t.text != "and") ||
               t.kind == TokenKind::kString || t.kind == TokenKind::kInteger ||
               t.kind == TokenKind::kFloat || IsOp("[") || IsOp("{")) {
      if (IsName("is")) {
        return TemplateError(t.line, "you cannot chain multiple tests with is");
      }
      TSR_ASSIGN_OR_RETURN(ExprPtr arg, ParsePrimary());
      TSR_ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
      e->operands.push_back(std::move(arg));
    }
    return e;
  }

  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<Stmt*> macro_stack_;
};

}  // namespace

StatusOr<Body> Parse(const std::vector<Token>& tokens) {
  return Parser(tokens).ParseTemplate();
}

}  // namespace tessera::jinja
