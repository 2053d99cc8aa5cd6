// Operators of the Jinja engine with Python semantics: arithmetic, string
// concatenation, comparison, membership, iteration, length and slicing.
//
// Every failure is a Status naming the template line, the operator and the
// Python types involved, as Jinja would raise it ("'<' not supported between
// instances of 'str' and 'int'"). Pure functions; thread-safe.
#ifndef TESSERA_TOKENIZER_JINJA_OPERATIONS_H_
#define TESSERA_TOKENIZER_JINJA_OPERATIONS_H_

#include <string_view>

#include "base/status.h"
#include "tokenizer/jinja/value.h"

namespace tessera::jinja {

// "line N: message" as an INVALID_ARGUMENT (a template or data error).
Status TemplateError(int line, std::string_view message);
// "line N: message" as UNIMPLEMENTED (a construct the engine lacks).
Status UnsupportedError(int line, std::string_view message);
// The error for using an Undefined value where Jinja raises UndefinedError:
// its hint, then "(doing)" when given ("'x' is undefined (calling it)").
Status UndefinedError(int line, const Value& undefined,
                      std::string_view doing = {});

enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat };
enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

std::string_view BinaryOpSymbol(BinaryOp op);
std::string_view CompareOpSymbol(CompareOp op);

// Python ==: numbers compare by value across bool/int/float, a list never
// equals a tuple, Undefined equals only Undefined.
bool Equals(const Value& a, const Value& b);
// Python ordering (<): numbers, strings (code point order), lists and tuples
// element-wise. Returns -1, 0 or 1, or an error for unorderable types.
StatusOr<int> Order(const Value& a, const Value& b, int line,
                    std::string_view op_symbol = "<");

StatusOr<Value> ApplyBinary(BinaryOp op, const Value& a, const Value& b,
                            int line);
StatusOr<bool> ApplyCompare(CompareOp op, const Value& a, const Value& b,
                            int line);
StatusOr<Value> Negate(const Value& v, int line);
StatusOr<Value> UnaryPlus(const Value& v, int line);

// `item in container`.
StatusOr<bool> Contains(const Value& container, const Value& item, int line);

// What `for x in v` visits: list/tuple items, dict keys, string code points;
// Undefined is empty.
StatusOr<ValueList> Iterate(const Value& v, int line);

// Python len(); Undefined has length 0.
StatusOr<int64_t> Length(const Value& v, int line);

// v[start:stop:step] with Python's index rules on lists, tuples and strings
// (code points). Absent bounds are None. Other receivers give Undefined, as
// Jinja's getitem does; Undefined itself is an error.
StatusOr<Value> Slice(const Value& v, const Value& start, const Value& stop,
                      const Value& step, int line);

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_OPERATIONS_H_
