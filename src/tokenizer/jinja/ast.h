// Syntax tree of the Jinja engine, built by the parser and walked by the
// interpreter.
//
// Nodes are plain structs ("fat nodes"): a kind plus the fields that kind
// uses, listed beside each field. A tree is immutable once parsed, so one
// tree may be rendered from several threads at once.
#ifndef TESSERA_TOKENIZER_JINJA_AST_H_
#define TESSERA_TOKENIZER_JINJA_AST_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/value.h"

namespace tessera::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,    // value
    kName,       // name
    kList,       // operands: items
    kTuple,      // operands: items
    kDict,       // operands: key0, value0, key1, value1, ...
    kGetAttr,    // operands: [object]; name: the attribute
    kGetItem,    // operands: [object, key]
    kSlice,      // operands: [object, start, stop, step] (null when absent)
    kCall,       // operands: [callee, positional args...]; keyword
    kFilter,     // operands: [input (null in filter blocks), args...]; name;
                 // keyword
    kTest,       // operands: [input, args...]; name; keyword; negated
    kNeg,        // operands: [x]
    kPos,        // operands: [x]
    kNot,        // operands: [x]
    kBinary,     // operands: [left, right]; op
    kAnd,        // operands: [left, right]
    kOr,         // operands: [left, right]
    kCompare,    // operands: [first, others...]; compare_ops (one per other)
    kCondition,  // operands: [test, if_true, if_false (null: Undefined)]
  };

  Kind kind = Kind::kLiteral;
  int line = 0;
  Value value;
  std::string name;
  BinaryOp op = BinaryOp::kAdd;
  std::vector<CompareOp> compare_ops;
  bool negated = false;
  std::vector<ExprPtr> operands;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

// Left side of an assignment or a for loop.
struct Target {
  enum class Kind {
    kName,           // name
    kTuple,          // items
    kNamespaceAttr,  // name.attr (`{% set ns.x = ... %}`)
  };
  Kind kind = Kind::kName;
  std::string name;
  std::string attr;
  std::vector<Target> items;
  int line = 0;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // expr: printed with Python str()
    kIf,           // branches (if, elif...); else_body
    kFor,          // targets[0] in expr [if condition]; body; else_body
    kSet,          // targets[0] = expr
    kSetBlock,     // targets[0] = rendered body, through filters
    kMacro,        // name; params; body; uses_varargs / uses_kwargs
    kCallBlock,    // expr: the macro call; params / body: the caller macro
    kFilterBlock,  // body rendered, then filters applied
    kWith,         // targets[i] = values[i] in a new scope; body
    kBreak,
    kContinue,
    kScope,  // body rendered in place ({% generation %})
  };

  Kind kind = Kind::kText;
  int line = 0;
  std::string text;
  std::string name;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<Target> targets;
  std::vector<ExprPtr> values;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<ExprPtr> filters;  // kFilter nodes whose input is null
  std::vector<std::pair<std::string, ExprPtr>> params;  // default or null
  bool uses_varargs = false;
  bool uses_kwargs = false;
};

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_AST_H_
