#include "tokenizer/jinja/parser.h"

#include <fmt/format.h>

#include <initializer_list>
#include <string_view>

#include "tokenizer/jinja/expression_parser.h"
#include "tokenizer/jinja/token_stream.h"

namespace tessera::jinja {
namespace {

// Deeper nesting than this is refused rather than risking the stack.
constexpr int kMaxBlockDepth = 200;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : ts_(tokens), expr_(ts_) {}

  StatusOr<Body> ParseTemplate() {
    Body body;
    TSR_RETURN_IF_ERROR(ParseBody({}, &body));
    return body;
  }

 private:
  // Parses nodes until `{% name %}` with name in `end_tags` (left unconsumed,
  // positioned at the name) or the end of the template.
  Status ParseBody(std::initializer_list<std::string_view> end_tags,
                   Body* body) {
    while (true) {
      const Token& t = ts_.Cur();
      switch (t.kind) {
        case TokenKind::kEnd:
          return OkStatus();
        case TokenKind::kText: {
          auto s = std::make_unique<Stmt>();
          s->kind = Stmt::Kind::kText;
          s->line = t.line;
          s->text = t.text;
          body->push_back(std::move(s));
          ts_.Next();
          break;
        }
        case TokenKind::kVariableBegin: {
          auto s = std::make_unique<Stmt>();
          s->kind = Stmt::Kind::kOutput;
          s->line = t.line;
          ts_.Next();
          TSR_ASSIGN_OR_RETURN(s->expr, expr_.ParseTuple());
          if (ts_.Cur().kind != TokenKind::kVariableEnd) {
            return ts_.Unexpected("'}}'");
          }
          ts_.Next();
          body->push_back(std::move(s));
          break;
        }
        case TokenKind::kBlockBegin: {
          const Token& name = ts_.Peek(1);
          if (name.kind == TokenKind::kName) {
            for (std::string_view end : end_tags) {
              if (name.text == end) {
                ts_.Next();  // leave the name current
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
          ts_.Next();
          TSR_RETURN_IF_ERROR(ParseStatement(body));
          break;
        }
        default:
          return ts_.Unexpected("template text or a tag");
      }
    }
  }

  // Parses the body of a block whose opening tag has been read, up to and
  // including `{% end_tag %}`.
  Status ParseBlockBody(std::string_view opener, int open_line,
                        std::string_view end_tag, Body* body) {
    TSR_RETURN_IF_ERROR(ParseBody({end_tag}, body));
    if (!ts_.SkipName(end_tag)) {
      return TemplateError(open_line,
                           fmt::format("'{}' block is never closed with "
                                       "'{{% {} %}}'",
                                       opener, end_tag));
    }
    return ts_.ExpectBlockEnd();
  }

  Status ParseStatement(Body* body) {
    if (ts_.Cur().kind != TokenKind::kName) return ts_.Unexpected("a tag name");
    if (++depth_ > kMaxBlockDepth) {
      return TemplateError(ts_.Cur().line, "blocks are nested too deeply");
    }
    const std::string tag = ts_.Cur().text;
    const int line = ts_.Cur().line;
    ts_.Next();
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
      status = ParsePrint(s.get());
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) {
        return TemplateError(line, fmt::format("'{}' outside of a loop", tag));
      }
      s->kind = tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue;
      status = ts_.ExpectBlockEnd();
    } else if (tag == "generation") {
      s->kind = Stmt::Kind::kScope;
      status = ts_.ExpectBlockEnd();
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

  Status ParsePrint(Stmt* s) {
    s->kind = Stmt::Kind::kOutput;
    TSR_ASSIGN_OR_RETURN(s->expr, expr_.ParseTuple());
    return ts_.ExpectBlockEnd();
  }

  Status ParseIf(Stmt* s) {
    s->kind = Stmt::Kind::kIf;
    const int open_line = s->line;
    while (true) {
      TSR_ASSIGN_OR_RETURN(ExprPtr cond,
                           expr_.ParseTuple(/*with_condexpr=*/false));
      TSR_RETURN_IF_ERROR(ts_.ExpectBlockEnd());
      Body body;
      TSR_RETURN_IF_ERROR(ParseBody({"elif", "else", "endif"}, &body));
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (ts_.SkipName("elif")) continue;
      if (ts_.SkipName("else")) {
        TSR_RETURN_IF_ERROR(ts_.ExpectBlockEnd());
        return ParseBlockBody("if", open_line, "endif", &s->else_body);
      }
      if (!ts_.SkipName("endif")) {
        return TemplateError(open_line,
                             "'if' block is never closed with '{% endif %}'");
      }
      return ts_.ExpectBlockEnd();
    }
  }

  Status ParseFor(Stmt* s) {
    s->kind = Stmt::Kind::kFor;
    TSR_ASSIGN_OR_RETURN(Target target, ParseAssignTarget(false, "in"));
    s->targets.push_back(std::move(target));
    if (!ts_.SkipName("in")) return ts_.Unexpected("'in'");
    TSR_ASSIGN_OR_RETURN(s->expr, expr_.ParseTuple(/*with_condexpr=*/false));
    if (ts_.SkipName("if")) {
      TSR_ASSIGN_OR_RETURN(s->condition, expr_.ParseExpression(true));
    }
    if (ts_.IsName("recursive")) {
      return UnsupportedError(ts_.Cur().line,
                              "recursive for loops are not "
                              "supported");
    }
    TSR_RETURN_IF_ERROR(ts_.ExpectBlockEnd());
    ++loop_depth_;
    Status status = ParseBody({"else", "endfor"}, &s->body);
    --loop_depth_;
    TSR_RETURN_IF_ERROR(status);
    if (ts_.SkipName("else")) {
      TSR_RETURN_IF_ERROR(ts_.ExpectBlockEnd());
      return ParseBlockBody("for", s->line, "endfor", &s->else_body);
    }
    if (!ts_.SkipName("endfor")) {
      return TemplateError(s->line,
                           "'for' block is never closed with '{% endfor %}'");
    }
    return ts_.ExpectBlockEnd();
  }

  Status ParseSet(Stmt* s) {
    TSR_ASSIGN_OR_RETURN(Target target, ParseAssignTarget(true, ""));
    s->targets.push_back(std::move(target));
    if (ts_.SkipOp("=")) {
      s->kind = Stmt::Kind::kSet;
      TSR_ASSIGN_OR_RETURN(s->expr, expr_.ParseTuple());
      return ts_.ExpectBlockEnd();
    }
    s->kind = Stmt::Kind::kSetBlock;
    while (ts_.SkipOp("|")) {
      TSR_ASSIGN_OR_RETURN(ExprPtr f, expr_.ParseFilter(nullptr));
      s->filters.push_back(std::move(f));
    }
    TSR_RETURN_IF_ERROR(ts_.ExpectBlockEnd());
    return ParseBlockBody("set", s->line, "endset", &s->body);
  }

  Status ParseParams(Stmt* s) {
    TSR_RETURN_IF_ERROR(ts_.ExpectOp("("));
    while (!ts_.IsOp(")")) {
      if (!s->params.empty()) TSR_RETURN_IF_ERROR(ts_.ExpectOp(","));
      if (ts_.IsOp(")")) break;
      TSR_ASSIGN_OR_RETURN(std::string name,
                           ts_.ExpectName("a parameter name"));
      ExprPtr def;
      if (ts_.SkipOp("=")) {
        TSR_ASSIGN_OR_RETURN(def, expr_.ParseExpression(true));
      } else if (!s->params.empty() && s->params.back().second) {
        return TemplateError(ts_.Cur().line,
                             "non-default argument follows default argument");
      }
      s->params.emplace_back(std::move(name), std::move(def));
    }
    ts_.Next();
    return OkStatus();
  }

  // Parses a macro-like body (macro or caller) with its own varargs/kwargs
  // tracking and no enclosing loop.
  Status ParseCallableBody(Stmt* s, std::string_view opener,
                           std::string_view end_tag) {
    macro_stack_.push_back(s);
    expr_.set_macro(s);
    const int saved_loop_depth = loop_depth_;
    loop_depth_ = 0;
    Status status = ParseBlockBody(opener, s->line, end_tag, &s->body);
    loop_depth_ = saved_loop_depth;
    macro_stack_.pop_back();
    expr_.set_macro(macro_stack_.empty() ? nullptr : macro_stack_.back());
    return status;
  }

  Status ParseMacro(Stmt* s) {
    s->kind = Stmt::Kind::kMacro;
    TSR_ASSIGN_OR_RETURN(s->name, ts_.ExpectName("a macro name"));
    TSR_RETURN_IF_ERROR(ParseParams(s));
    TSR_RETURN_IF_ERROR(ts_.ExpectBlockEnd());
    return ParseCallableBody(s, "macro", "endmacro");
  }

  Status ParseCallBlock(Stmt* s) {
    s->kind = Stmt::Kind::kCallBlock;
    if (ts_.IsOp("(")) TSR_RETURN_IF_ERROR(ParseParams(s));
    const int line = ts_.Cur().line;
    TSR_ASSIGN_OR_RETURN(s->expr, expr_.ParseExpression(true));
    if (s->expr->kind != Expr::Kind::kCall) {
      return TemplateError(line, "'call' expects a macro call");
    }
    TSR_RETURN_IF_ERROR(ts_.ExpectBlockEnd());
    return ParseCallableBody(s, "call", "endcall");
  }

  Status ParseFilterBlock(Stmt* s) {
    s->kind = Stmt::Kind::kFilterBlock;
    do {
      TSR_ASSIGN_OR_RETURN(ExprPtr f, expr_.ParseFilter(nullptr));
      s->filters.push_back(std::move(f));
    } while (ts_.SkipOp("|"));
    TSR_RETURN_IF_ERROR(ts_.ExpectBlockEnd());
    return ParseBlockBody("filter", s->line, "endfilter", &s->body);
  }

  Status ParseWith(Stmt* s) {
    s->kind = Stmt::Kind::kWith;
    while (ts_.Cur().kind != TokenKind::kBlockEnd) {
      if (!s->targets.empty()) TSR_RETURN_IF_ERROR(ts_.ExpectOp(","));
      TSR_ASSIGN_OR_RETURN(Target target, ParseAssignTarget(false, ""));
      TSR_RETURN_IF_ERROR(ts_.ExpectOp("="));
      TSR_ASSIGN_OR_RETURN(ExprPtr value, expr_.ParseExpression(true));
      s->targets.push_back(std::move(target));
      s->values.push_back(std::move(value));
    }
    ts_.Next();
    return ParseBlockBody("with", s->line, "endwith", &s->body);
  }

  // A name, `name.attr` (namespaces, when allowed) or a tuple of names,
  // optionally in parentheses; stops before `stop_name` or `=`.
  StatusOr<Target> ParseAssignTarget(bool with_namespace,
                                     std::string_view stop_name) {
    const int line = ts_.Cur().line;
    if (with_namespace && ts_.Cur().kind == TokenKind::kName &&
        ts_.Peek(1).kind == TokenKind::kOperator && ts_.Peek(1).text == ".") {
      Target t;
      t.kind = Target::Kind::kNamespaceAttr;
      t.line = line;
      t.name = ts_.Cur().text;
      ts_.Next();
      ts_.Next();
      TSR_ASSIGN_OR_RETURN(t.attr, ts_.ExpectName("an attribute name"));
      return t;
    }
    Target tuple;
    tuple.kind = Target::Kind::kTuple;
    tuple.line = line;
    bool saw_comma = false;
    while (true) {
      Target item;
      if (ts_.SkipOp("(")) {
        TSR_ASSIGN_OR_RETURN(item, ParseAssignTarget(false, ""));
        TSR_RETURN_IF_ERROR(ts_.ExpectOp(")"));
      } else {
        item.kind = Target::Kind::kName;
        item.line = ts_.Cur().line;
        TSR_ASSIGN_OR_RETURN(item.name, ts_.ExpectName("a variable name"));
        if (item.name == "loop" && (loop_depth_ > 0 || stop_name == "in")) {
          return TemplateError(item.line,
                               "cannot assign to the special loop "
                               "variable 'loop' in a for loop");
        }
        if (item.name == "true" || item.name == "false" ||
            item.name == "none" || item.name == "True" ||
            item.name == "False" || item.name == "None") {
          return TemplateError(item.line,
                               fmt::format("cannot assign to '{}'", item.name));
        }
      }
      tuple.items.push_back(std::move(item));
      if (!ts_.SkipOp(",")) break;
      saw_comma = true;
      if (ts_.Cur().kind != TokenKind::kName && !ts_.IsOp("(")) break;
      if (!stop_name.empty() && ts_.IsName(stop_name)) break;
    }
    if (!saw_comma) return std::move(tuple.items.front());
    return tuple;
  }

  TokenStream ts_;
  ExpressionParser expr_;
  int depth_ = 0;
  int loop_depth_ = 0;
  std::vector<Stmt*> macro_stack_;
};

}  // namespace

StatusOr<Body> Parse(const std::vector<Token>& tokens) {
  return Parser(tokens).ParseTemplate();
}

}  // namespace tessera::jinja
