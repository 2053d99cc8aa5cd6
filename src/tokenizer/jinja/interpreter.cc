#include "tokenizer/jinja/interpreter.h"

#include <fmt/format.h>

#include <memory>
#include <unordered_set>
#include <vector>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/render_budget.h"

namespace tessera::jinja {
namespace {

// Deeper macro recursion than this is refused rather than risking the stack.
constexpr int kMaxCallDepth = 100;

// A namespace attribute may hold a value nested at most this deep. Namespaces
// are the one mutable kind, so they are the only way a render can build a
// cycle or nest without bound (`set ns.x = [ns.x]` in a loop); every reader
// of values (repr, tojson, comparisons) recurses, so both are refused here.
constexpr int kMaxAssignedDepth = 256;
// ... and at most this many nodes (shared sub-values count once per path, so
// a value built by doubling stays bounded).
constexpr int64_t kMaxAssignedNodes = 1'000'000;

// Why `value` cannot be stored in namespace `target` ("" when it can);
// `visited` counts the nodes walked (charged to the render budget).
std::string NamespaceStoreError(const Value& value, const Namespace* target,
                                int depth, int64_t& visited) {
  if (++visited > kMaxAssignedNodes) {
    return fmt::format("the value has more than {} elements",
                       kMaxAssignedNodes);
  }
  if (depth > kMaxAssignedDepth) {
    return fmt::format("the value is nested more than {} levels deep",
                       kMaxAssignedDepth);
  }
  auto walk = [&](const Value& v) {
    return NamespaceStoreError(v, target, depth + 1, visited);
  };
  switch (value.kind()) {
    case Value::Kind::kList:
      for (const Value& v : value.list()) {
        if (std::string e = walk(v); !e.empty()) return e;
      }
      break;
    case Value::Kind::kDict:
      for (const auto& [key, v] : value.dict()) {
        if (std::string e = walk(v); !e.empty()) return e;
      }
      break;
    case Value::Kind::kNamespace:
      if (&value.ns() == target) return "the value contains the namespace itself";
      for (const auto& [key, v] : value.ns().attrs) {
        if (std::string e = walk(v); !e.empty()) return e;
      }
      break;
    default:
      break;
  }
  return "";
}

struct Frame;
using FramePtr = std::shared_ptr<Frame>;

// One scope: its own variables, then its parent's.
struct Frame {
  FramePtr parent;
  ValueDict vars;
};

FramePtr NewFrame(const FramePtr& parent) {
  auto f = std::make_shared<Frame>();
  f->parent = parent;
  return f;
}

enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  Renderer() = default;
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Macros hold their defining scope and namespaces may hold themselves;
  // clearing these at the end breaks those reference cycles.
  ~Renderer() {
    for (const FramePtr& f : captured_frames_) f->vars = ValueDict();
    for (const Value& ns : assigned_namespaces_) ns.ns().attrs = ValueDict();
  }

  Status Exec(const Body& body, const FramePtr& frame, std::string* out,
              Flow* flow) {
    for (const StmtPtr& s : body) {
      TSR_RETURN_IF_ERROR(ExecStmt(*s, frame, out, flow));
      if (*flow != Flow::kNormal) return OkStatus();
    }
    return OkStatus();
  }

 private:
  // Runs one statement, counted against the render's budget; the output
  // may not outgrow kMaxStringBytes.
  Status ExecStmt(const Stmt& s, const FramePtr& frame, std::string* out,
                  Flow* flow) {
    TSR_RETURN_IF_ERROR(budget_.Step(s.line));
    TSR_RETURN_IF_ERROR(ExecStmtUnchecked(s, frame, out, flow));
    return CheckStringSize(out->size(), s.line, "the rendered output");
  }

  Status ExecStmtUnchecked(const Stmt& s, const FramePtr& frame,
                           std::string* out, Flow* flow) {
    switch (s.kind) {
      case Stmt::Kind::kText:
        out->append(s.text);
        return OkStatus();
      case Stmt::Kind::kOutput: {
        TSR_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, frame));
        out->append(v.ToStr());
        return OkStatus();
      }
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : s.branches) {
          TSR_ASSIGN_OR_RETURN(Value c, Eval(*cond, frame));
          if (c.Truthy()) return Exec(body, frame, out, flow);
        }
        return Exec(s.else_body, frame, out, flow);
      case Stmt::Kind::kFor:
        return ExecFor(s, frame, out, flow);
      case Stmt::Kind::kSet: {
        TSR_ASSIGN_OR_RETURN(Value v, Eval(*s.expr, frame));
        return Assign(s.targets[0], v, frame);
      }
      case Stmt::Kind::kSetBlock: {
        TSR_ASSIGN_OR_RETURN(Value v, RenderFiltered(s, frame));
        return Assign(s.targets[0], v, frame);
      }
      case Stmt::Kind::kFilterBlock: {
        TSR_ASSIGN_OR_RETURN(Value v, RenderFiltered(s, frame));
        out->append(v.ToStr());
        return OkStatus();
      }
      case Stmt::Kind::kMacro:
        frame->vars.Set(s.name, MakeMacro(s, frame, s.name));
        return OkStatus();
      case Stmt::Kind::kCallBlock: {
        Value caller = MakeMacro(s, frame, "caller");
        TSR_ASSIGN_OR_RETURN(Value v, EvalCall(*s.expr, frame, &caller));
        out->append(v.ToStr());
        return OkStatus();
      }
      case Stmt::Kind::kWith: {
        FramePtr inner = NewFrame(frame);
        for (size_t i = 0; i < s.targets.size(); ++i) {
          TSR_ASSIGN_OR_RETURN(Value v, Eval(*s.values[i], frame));
          TSR_RETURN_IF_ERROR(Assign(s.targets[i], v, inner));
        }
        return Exec(s.body, inner, out, flow);
      }
      case Stmt::Kind::kBreak:
        *flow = Flow::kBreak;
        return OkStatus();
      case Stmt::Kind::kContinue:
        *flow = Flow::kContinue;
        return OkStatus();
      case Stmt::Kind::kScope:
        return Exec(s.body, frame, out, flow);
    }
    return OkStatus();
  }

  Status ExecFor(const Stmt& s, const FramePtr& frame, std::string* out,
                 Flow* flow) {
    TSR_ASSIGN_OR_RETURN(Value iterable, Eval(*s.expr, frame));
    TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(iterable, s.expr->line));
    if (s.condition) {  // `for x in xs if cond`: loop.* counts kept items
      ValueList kept;
      for (const Value& item : items) {
        FramePtr probe = NewFrame(frame);
        TSR_RETURN_IF_ERROR(Assign(s.targets[0], item, probe));
        TSR_ASSIGN_OR_RETURN(Value c, Eval(*s.condition, probe));
        if (c.Truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      TSR_RETURN_IF_ERROR(budget_.Step(s.line));  // an empty body counts too
      FramePtr inner = NewFrame(frame);
      TSR_RETURN_IF_ERROR(Assign(s.targets[0], items[i], inner));
      inner->vars.Set("loop", MakeLoop(items, i));
      Flow body_flow = Flow::kNormal;
      TSR_RETURN_IF_ERROR(Exec(s.body, inner, out, &body_flow));
      if (body_flow == Flow::kBreak) break;
    }
    if (n == 0) return Exec(s.else_body, NewFrame(frame), out, flow);
    return OkStatus();
  }

  static Value MakeLoop(const ValueList& items, int64_t i) {
    const auto n = static_cast<int64_t>(items.size());
    ValueDict loop;
    loop.Set("index", Value(i + 1));
    loop.Set("index0", Value(i));
    loop.Set("revindex", Value(n - i));
    loop.Set("revindex0", Value(n - i - 1));
    loop.Set("first", Value(i == 0));
    loop.Set("last", Value(i == n - 1));
    loop.Set("length", Value(n));
    loop.Set("depth", Value(1));
    loop.Set("depth0", Value(0));
    if (i > 0) loop.Set("previtem", items[i - 1]);
    if (i + 1 < n) loop.Set("nextitem", items[i + 1]);
    loop.Set("cycle",
             Value::Function(
                 "loop.cycle", [i](const CallArgs& args) -> StatusOr<Value> {
                   if (args.positional.empty() || !args.keyword.empty()) {
                     return TemplateError(args.line,
                                          "loop.cycle() needs at least "
                                          "one positional argument");
                   }
                   return args.positional[i % args.positional.size()];
                 }));
    return Value::NewNamespace(std::move(loop), /*assignable=*/false,
                               "LoopContext");
  }

  // Renders a block set / filter block body in its own scope, then applies
  // its filters.
  StatusOr<Value> RenderFiltered(const Stmt& s, const FramePtr& frame) {
    std::string text;
    Flow flow = Flow::kNormal;
    TSR_RETURN_IF_ERROR(Exec(s.body, NewFrame(frame), &text, &flow));
    Value v(std::move(text));
    for (const ExprPtr& f : s.filters) {
      TSR_ASSIGN_OR_RETURN(v, EvalFilter(*f, v, frame));
    }
    return v;
  }

  Status Assign(const Target& t, const Value& value, const FramePtr& frame) {
    switch (t.kind) {
      case Target::Kind::kName:
        frame->vars.Set(t.name, value);
        return OkStatus();
      case Target::Kind::kTuple: {
        TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(value, t.line));
        if (items.size() != t.items.size()) {
          return TemplateError(
              t.line, items.size() > t.items.size()
                          ? fmt::format("too many values to unpack (expected "
                                        "{})",
                                        t.items.size())
                          : fmt::format("not enough values to unpack "
                                        "(expected {}, got {})",
                                        t.items.size(), items.size()));
        }
        for (size_t i = 0; i < items.size(); ++i) {
          TSR_RETURN_IF_ERROR(Assign(t.items[i], items[i], frame));
        }
        return OkStatus();
      }
      case Target::Kind::kNamespaceAttr: {
        const Value ns = Lookup(t.name, frame);
        if (!ns.is_namespace() || !ns.ns().assignable) {
          return TemplateError(
              t.line, fmt::format("cannot assign attribute '{}' on '{}': it is "
                                  "not a namespace() object",
                                  t.attr, t.name));
        }
        int64_t visited = 0;
        const std::string refused =
            NamespaceStoreError(value, &ns.ns(), 0, visited);
        TSR_RETURN_IF_ERROR(budget_.Spend(visited, t.line));
        if (!refused.empty()) {
          return TemplateError(
              t.line, fmt::format("cannot assign '{}.{}': {}", t.name, t.attr,
                                  refused));
        }
        ns.ns().attrs.Set(t.attr, value);
        if (seen_namespaces_.insert(&ns.ns()).second) {
          assigned_namespaces_.push_back(ns);
        }
        return OkStatus();
      }
    }
    return OkStatus();
  }

  static Value Lookup(const std::string& name, const FramePtr& frame) {
    for (const Frame* f = frame.get(); f != nullptr; f = f->parent.get()) {
      if (const Value* v = f->vars.Find(name)) return *v;
    }
    return Value::Undefined(fmt::format("'{}' is undefined", name));
  }

  // A macro (or a call block's `caller`) closing over `frame`.
  Value MakeMacro(const Stmt& s, const FramePtr& frame, std::string name) {
    captured_frames_.push_back(frame);
    return Value::Function(fmt::format("macro '{}'", name),
                           [this, &s, frame, name](const CallArgs& args) {
                             return CallMacro(s, frame, name, args);
                           });
  }

  StatusOr<Value> CallMacro(const Stmt& s, const FramePtr& closure,
                            const std::string& name, const CallArgs& args) {
    if (call_depth_ >= kMaxCallDepth) {
      return TemplateError(args.line, fmt::format("macro '{}': recursion is "
                                                  "deeper than {} calls",
                                                  name, kMaxCallDepth));
    }
    FramePtr frame = NewFrame(closure);
    const size_t n_params = s.params.size();
    ValueList varargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
      if (i < n_params) {
        frame->vars.Set(s.params[i].first, args.positional[i]);
      } else if (s.uses_varargs) {
        varargs.push_back(args.positional[i]);
      } else {
        return TemplateError(args.line, fmt::format("macro '{}' takes not more "
                                                    "than {} argument(s)",
                                                    name, n_params));
      }
    }
    ValueDict kwargs;
    for (const auto& [key, value] : args.keyword) {
      size_t i = 0;
      while (i < n_params && s.params[i].first != key) ++i;
      if (i < n_params) {
        if (i < args.positional.size()) {
          return TemplateError(args.line,
                               fmt::format("macro '{}' got multiple values for "
                                           "argument '{}'",
                                           name, key));
        }
        frame->vars.Set(key, value);
      } else if (key == "caller") {
        frame->vars.Set(key, value);
      } else if (s.uses_kwargs) {
        kwargs.Set(key, value);
      } else {
        return TemplateError(args.line, fmt::format("macro '{}' takes no "
                                                    "keyword argument '{}'",
                                                    name, key));
      }
    }
    if (s.uses_varargs)
      frame->vars.Set("varargs", Value::Tuple(std::move(varargs)));
    if (s.uses_kwargs)
      frame->vars.Set("kwargs", Value::Dict(std::move(kwargs)));
    for (const auto& [param, default_expr] : s.params) {
      if (frame->vars.Find(param) != nullptr) continue;
      if (default_expr) {
        TSR_ASSIGN_OR_RETURN(Value v, Eval(*default_expr, frame));
        frame->vars.Set(param, v);
      } else {
        frame->vars.Set(param, Value::Undefined(fmt::format(
                                   "parameter '{}' was not provided", param)));
      }
    }
    std::string out;
    Flow flow = Flow::kNormal;
    ++call_depth_;
    Status status = Exec(s.body, frame, &out, &flow);
    --call_depth_;
    TSR_RETURN_IF_ERROR(status);
    return Value(std::move(out));
  }

  StatusOr<CallArgs> EvalArgs(const Expr& e, const FramePtr& frame) {
    CallArgs args;
    args.line = e.line;
    for (size_t i = 1; i < e.operands.size(); ++i) {
      TSR_ASSIGN_OR_RETURN(Value v, Eval(*e.operands[i], frame));
      args.positional.push_back(std::move(v));
    }
    for (const auto& [name, expr] : e.keyword) {
      TSR_ASSIGN_OR_RETURN(Value v, Eval(*expr, frame));
      args.keyword.emplace_back(name, std::move(v));
    }
    return args;
  }

  // A call; `caller`, when given, is passed as the caller= keyword.
  StatusOr<Value> EvalCall(const Expr& e, const FramePtr& frame,
                           const Value* caller) {
    TSR_ASSIGN_OR_RETURN(Value callee, Eval(*e.operands[0], frame));
    if (callee.is_undefined()) {
      return UndefinedError(e.line, callee, "calling it");
    }
    if (!callee.is_callable()) {
      return TemplateError(e.line, fmt::format("'{}' object is not callable",
                                               callee.TypeName()));
    }
    TSR_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, frame));
    if (caller != nullptr) args.keyword.emplace_back("caller", *caller);
    return callee.callable().fn(args);
  }

  StatusOr<Value> EvalFilter(const Expr& e, const Value& input,
                             const FramePtr& frame) {
    TSR_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, frame));
    return ApplyFilter(e.name, input, args);
  }

  StatusOr<Value> Eval(const Expr& e, const FramePtr& frame) {
    TSR_RETURN_IF_ERROR(budget_.Step(e.line));
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return Lookup(e.name, frame);
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ValueList items;
        items.reserve(e.operands.size());
        for (const ExprPtr& item : e.operands) {
          TSR_ASSIGN_OR_RETURN(Value v, Eval(*item, frame));
          items.push_back(std::move(v));
        }
        return e.kind == Expr::Kind::kList ? Value::List(std::move(items))
                                           : Value::Tuple(std::move(items));
      }
      case Expr::Kind::kDict: {
        ValueDict dict;
        for (size_t i = 0; i < e.operands.size(); i += 2) {
          TSR_ASSIGN_OR_RETURN(Value key, Eval(*e.operands[i], frame));
          if (!key.is_string()) {
            return UnsupportedError(
                e.operands[i]->line,
                fmt::format("dict keys must be strings (got '{}')",
                            key.TypeName()));
          }
          TSR_ASSIGN_OR_RETURN(Value value, Eval(*e.operands[i + 1], frame));
          dict.Set(key.str(), std::move(value));
        }
        return Value::Dict(std::move(dict));
      }
      case Expr::Kind::kGetAttr: {
        TSR_ASSIGN_OR_RETURN(Value object, Eval(*e.operands[0], frame));
        return GetAttr(object, e.name, e.line);
      }
      case Expr::Kind::kGetItem: {
        TSR_ASSIGN_OR_RETURN(Value object, Eval(*e.operands[0], frame));
        TSR_ASSIGN_OR_RETURN(Value key, Eval(*e.operands[1], frame));
        return GetItem(object, key, e.line);
      }
      case Expr::Kind::kSlice: {
        TSR_ASSIGN_OR_RETURN(Value object, Eval(*e.operands[0], frame));
        Value bounds[3] = {Value::None(), Value::None(), Value::None()};
        for (int i = 0; i < 3; ++i) {
          if (e.operands[i + 1]) {
            TSR_ASSIGN_OR_RETURN(bounds[i], Eval(*e.operands[i + 1], frame));
          }
        }
        return Slice(object, bounds[0], bounds[1], bounds[2], e.line);
      }
      case Expr::Kind::kCall:
        return EvalCall(e, frame, nullptr);
      case Expr::Kind::kFilter: {
        TSR_ASSIGN_OR_RETURN(Value input, Eval(*e.operands[0], frame));
        return EvalFilter(e, input, frame);
      }
      case Expr::Kind::kTest: {
        TSR_ASSIGN_OR_RETURN(Value input, Eval(*e.operands[0], frame));
        TSR_ASSIGN_OR_RETURN(CallArgs args, EvalArgs(e, frame));
        TSR_ASSIGN_OR_RETURN(bool result, ApplyTest(e.name, input, args));
        return Value(result != e.negated);
      }
      case Expr::Kind::kNeg:
      case Expr::Kind::kPos: {
        TSR_ASSIGN_OR_RETURN(Value v, Eval(*e.operands[0], frame));
        return e.kind == Expr::Kind::kNeg ? Negate(v, e.line)
                                          : UnaryPlus(v, e.line);
      }
      case Expr::Kind::kNot: {
        TSR_ASSIGN_OR_RETURN(Value v, Eval(*e.operands[0], frame));
        return Value(!v.Truthy());
      }
      case Expr::Kind::kBinary: {
        TSR_ASSIGN_OR_RETURN(Value a, Eval(*e.operands[0], frame));
        TSR_ASSIGN_OR_RETURN(Value b, Eval(*e.operands[1], frame));
        return ApplyBinary(e.op, a, b, e.line);
      }
      case Expr::Kind::kAnd:
      case Expr::Kind::kOr: {  // Python returns the deciding operand
        TSR_ASSIGN_OR_RETURN(Value a, Eval(*e.operands[0], frame));
        if (a.Truthy() == (e.kind == Expr::Kind::kOr)) return a;
        return Eval(*e.operands[1], frame);
      }
      case Expr::Kind::kCompare: {
        TSR_ASSIGN_OR_RETURN(Value a, Eval(*e.operands[0], frame));
        for (size_t i = 0; i < e.compare_ops.size(); ++i) {
          TSR_ASSIGN_OR_RETURN(Value b, Eval(*e.operands[i + 1], frame));
          TSR_ASSIGN_OR_RETURN(bool ok,
                               ApplyCompare(e.compare_ops[i], a, b, e.line));
          if (!ok) return Value(false);
          a = std::move(b);
        }
        return Value(true);
      }
      case Expr::Kind::kCondition: {
        TSR_ASSIGN_OR_RETURN(Value test, Eval(*e.operands[0], frame));
        if (test.Truthy()) return Eval(*e.operands[1], frame);
        if (e.operands[2]) return Eval(*e.operands[2], frame);
        return Value::Undefined(fmt::format(
            "the inline if-expression on line {} evaluated to false and no "
            "else section was defined",
            e.line));
      }
    }
    return InternalError("unknown expression kind");
  }

  RenderBudget budget_;
  RenderBudget::Scope budget_scope_{&budget_};
  int call_depth_ = 0;
  std::vector<FramePtr> captured_frames_;
  std::vector<Value> assigned_namespaces_;
  std::unordered_set<const Namespace*> seen_namespaces_;
};

}  // namespace

StatusOr<std::string> RenderBody(const Body& body, const ValueDict& variables) {
  auto globals = std::make_shared<Frame>();
  globals->vars = Globals();
  FramePtr context = NewFrame(globals);
  context->vars = variables;
  std::string out;
  Flow flow = Flow::kNormal;
  Renderer renderer;
  TSR_RETURN_IF_ERROR(renderer.Exec(body, context, &out, &flow));
  return out;
}

}  // namespace tessera::jinja
