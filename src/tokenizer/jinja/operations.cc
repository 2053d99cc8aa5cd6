#include "tokenizer/jinja/operations.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "tokenizer/jinja/render_budget.h"
#include "tokenizer/jinja/text.h"

namespace tessera::jinja {
namespace {

// Repeated lists past this many items are refused ([0] * 10**12); strings
// are held to kMaxStringBytes ("x" * 10**12).
constexpr int64_t kMaxRepeatItems = int64_t{1} << 22;

Status OperandError(int line, std::string_view op, const Value& a,
                    const Value& b) {
  return TemplateError(
      line, fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op,
                        a.TypeName(), b.TypeName()));
}

Status OverflowError(int line) {
  return TemplateError(line,
                       "integer overflow (the engine's integers are 64-bit)");
}

StatusOr<Value> Repeat(const Value& seq, int64_t times, int line) {
  times = std::max<int64_t>(times, 0);
  const int64_t unit = seq.is_string()
                           ? static_cast<int64_t>(seq.str().size())
                           : static_cast<int64_t>(seq.list().size());
  if (seq.is_string() && unit != 0) {
    const int64_t max_times = static_cast<int64_t>(kMaxStringBytes) / unit;
    TSR_RETURN_IF_ERROR(
        CheckStringSize(times > max_times ? kMaxStringBytes + 1 : unit * times,
                        line, "the repeated string"));
  }
  if (!seq.is_string() && unit != 0 && times > kMaxRepeatItems / unit) {
    return TemplateError(line, "repetition result is too large");
  }
  if (seq.is_string()) {
    std::string out;
    out.reserve(unit * times);
    for (int64_t i = 0; i < times; ++i) out += seq.str();
    return Value(std::move(out));
  }
  ValueList out;
  for (int64_t i = 0; i < times; ++i) {
    out.insert(out.end(), seq.list().begin(), seq.list().end());
  }
  return seq.is_tuple() ? Value::Tuple(std::move(out))
                        : Value::List(std::move(out));
}

// Python's float floor division and modulo.
double FloatMod(double a, double b) {
  double mod = std::fmod(a, b);
  if (mod != 0.0) {
    if ((b < 0) != (mod < 0)) mod += b;
  } else {
    mod = std::copysign(0.0, b);
  }
  return mod;
}

double FloatFloorDiv(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

StatusOr<Value> IntPow(int64_t base, int64_t exp, int line) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, base, &result))
        return OverflowError(line);
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(base, base, &base)) {
      return OverflowError(line);
    }
  }
  return Value(result);
}

StatusOr<Value> Arithmetic(BinaryOp op, const Value& a, const Value& b,
                           int line) {
  const std::string_view sym = BinaryOpSymbol(op);
  if (!a.is_number() || !b.is_number()) return OperandError(line, sym, a, b);
  const bool ints = a.is_integral() && b.is_integral();
  if (ints) {
    const int64_t x = a.int_value(), y = b.int_value();
    int64_t r = 0;
    switch (op) {
      case BinaryOp::kAdd:
        if (__builtin_add_overflow(x, y, &r)) return OverflowError(line);
        return Value(r);
      case BinaryOp::kSub:
        if (__builtin_sub_overflow(x, y, &r)) return OverflowError(line);
        return Value(r);
      case BinaryOp::kMul:
        if (__builtin_mul_overflow(x, y, &r)) return OverflowError(line);
        return Value(r);
      case BinaryOp::kFloorDiv:
      case BinaryOp::kMod: {
        if (y == 0) {
          return TemplateError(line, "integer division or modulo by zero");
        }
        if (y == -1) {
          if (op == BinaryOp::kMod) return Value(int64_t{0});
          if (x == std::numeric_limits<int64_t>::min())
            return OverflowError(line);
          return Value(-x);
        }
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          --q;
          m += y;
        }
        return Value(op == BinaryOp::kMod ? m : q);
      }
      case BinaryOp::kPow:
        if (y >= 0) return IntPow(x, y, line);
        break;  // a negative exponent gives a float
      default:
        break;
    }
  }
  const double x = a.number_value(), y = b.number_value();
  switch (op) {
    case BinaryOp::kAdd:
      return Value(x + y);
    case BinaryOp::kSub:
      return Value(x - y);
    case BinaryOp::kMul:
      return Value(x * y);
    case BinaryOp::kDiv:
      if (y == 0.0) return TemplateError(line, "division by zero");
      return Value(x / y);
    case BinaryOp::kFloorDiv:
      if (y == 0.0) return TemplateError(line, "float floor division by zero");
      return Value(FloatFloorDiv(x, y));
    case BinaryOp::kMod:
      if (y == 0.0) return TemplateError(line, "float modulo by zero");
      return Value(FloatMod(x, y));
    case BinaryOp::kPow:
      if (x == 0.0 && y < 0) {
        return TemplateError(line, "0.0 cannot be raised to a negative power");
      }
      if (x < 0 && y != std::floor(y)) {
        return UnsupportedError(
            line,
            "a negative number raised to a fractional power (complex "
            "result) is not supported");
      }
      return Value(std::pow(x, y));
    default:
      return OperandError(line, sym, a, b);
  }
}

// Python slice index normalisation (PySlice_AdjustIndices).
void AdjustIndices(int64_t length, int64_t* start, int64_t* stop, int64_t step,
                   bool has_start, bool has_stop) {
  auto clamp = [&](int64_t* idx, bool has, bool is_start) {
    if (!has) {
      *idx = step < 0 ? (is_start ? length - 1 : -1) : (is_start ? 0 : length);
      return;
    }
    if (*idx < 0) {
      *idx += length;
      if (*idx < 0) *idx = step < 0 ? -1 : 0;
    } else if (*idx >= length) {
      *idx = step < 0 ? length - 1 : length;
    }
  };
  clamp(start, has_start, true);
  clamp(stop, has_stop, false);
}

}  // namespace

Status TemplateError(int line, std::string_view message) {
  return InvalidArgumentError(fmt::format("line {}: {}", line, message));
}

Status UnsupportedError(int line, std::string_view message) {
  return UnimplementedError(fmt::format("line {}: {}", line, message));
}

Status UndefinedError(int line, const Value& undefined,
                      std::string_view doing) {
  std::string message = undefined.undefined_hint();
  if (message.empty()) message = "value is undefined";
  if (!doing.empty()) message += fmt::format(" ({})", doing);
  return TemplateError(line, message);
}

std::string_view BinaryOpSymbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kFloorDiv:
      return "//";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kPow:
      return "**";
    case BinaryOp::kConcat:
      return "~";
  }
  return "?";
}

std::string_view CompareOpSymbol(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "==";
    case CompareOp::kNe:
      return "!=";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
    case CompareOp::kIn:
      return "in";
    case CompareOp::kNotIn:
      return "not in";
  }
  return "?";
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral())
      return a.int_value() == b.int_value();
    return a.number_value() == b.number_value();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.str() == b.str();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple()) return false;
      const ValueList& x = a.list();
      const ValueList& y = b.list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      if (a.dict().size() != b.dict().size()) return false;
      for (const auto& [key, value] : a.dict()) {
        const Value* other = b.dict().Find(key);
        if (other == nullptr || !Equals(value, *other)) return false;
      }
      return true;
    }
    default:
      return a.SameAs(b);
  }
}

StatusOr<int> Order(const Value& a, const Value& b, int line,
                    std::string_view op_symbol) {
  if (a.is_undefined()) return UndefinedError(line, a);
  if (b.is_undefined()) return UndefinedError(line, b);
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) {
      return a.int_value() < b.int_value() ? -1
                                           : (a.int_value() > b.int_value());
    }
    const double x = a.number_value(), y = b.number_value();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.str().compare(b.str());  // UTF-8 bytes order as code points
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const ValueList& x = a.list();
    const ValueList& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return Order(x[i], y[i], line, op_symbol);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  return TemplateError(
      line, fmt::format("'{}' not supported between instances of '{}' and '{}'",
                        op_symbol, a.TypeName(), b.TypeName()));
}

StatusOr<Value> ApplyBinary(BinaryOp op, const Value& a, const Value& b,
                            int line) {
  if (op == BinaryOp::kConcat) {
    std::string left = a.ToStr();
    const std::string right = b.ToStr();
    TSR_RETURN_IF_ERROR(CheckStringSize(left.size() + right.size(), line,
                                        "the concatenated string"));
    return Value(std::move(left += right));
  }
  if (a.is_undefined()) return UndefinedError(line, a);
  if (b.is_undefined()) return UndefinedError(line, b);
  if (op == BinaryOp::kAdd) {
    if (a.is_string() && b.is_string()) {
      TSR_RETURN_IF_ERROR(CheckStringSize(a.str().size() + b.str().size(), line,
                                          "the concatenated string"));
      return Value(a.str() + b.str());
    }
    if (a.is_list() && b.is_list()) {
      if (a.is_tuple() != b.is_tuple()) {
        return OperandError(line, "+", a, b);
      }
      ValueList out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return a.is_tuple() ? Value::Tuple(std::move(out))
                          : Value::List(std::move(out));
    }
  }
  if (op == BinaryOp::kMul) {
    if ((a.is_string() || a.is_list()) && b.is_integral()) {
      return Repeat(a, b.int_value(), line);
    }
    if (a.is_integral() && (b.is_string() || b.is_list())) {
      return Repeat(b, a.int_value(), line);
    }
  }
  if (op == BinaryOp::kMod && a.is_string()) {
    return UnsupportedError(
        line,
        "printf-style string formatting ('...' % args) is not "
        "supported; use '~' or str.format()");
  }
  return Arithmetic(op, a, b, line);
}

StatusOr<bool> ApplyCompare(CompareOp op, const Value& a, const Value& b,
                            int line) {
  switch (op) {
    case CompareOp::kEq:
      return Equals(a, b);
    case CompareOp::kNe:
      return !Equals(a, b);
    case CompareOp::kIn:
      return Contains(b, a, line);
    case CompareOp::kNotIn: {
      TSR_ASSIGN_OR_RETURN(bool in, Contains(b, a, line));
      return !in;
    }
    default:
      break;
  }
  TSR_ASSIGN_OR_RETURN(int c, Order(a, b, line, CompareOpSymbol(op)));
  switch (op) {
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    case CompareOp::kGt:
      return c > 0;
    default:
      return c >= 0;
  }
}

StatusOr<Value> Negate(const Value& v, int line) {
  if (v.is_undefined()) return UndefinedError(line, v);
  if (v.is_float()) return Value(-v.number_value());
  if (v.is_integral()) {
    if (v.int_value() == std::numeric_limits<int64_t>::min()) {
      return OverflowError(line);
    }
    return Value(-v.int_value());
  }
  return TemplateError(
      line, fmt::format("bad operand type for unary -: '{}'", v.TypeName()));
}

StatusOr<Value> UnaryPlus(const Value& v, int line) {
  if (v.is_undefined()) return UndefinedError(line, v);
  if (v.is_float()) return v;
  if (v.is_integral()) return Value(v.int_value());
  return TemplateError(
      line, fmt::format("bad operand type for unary +: '{}'", v.TypeName()));
}

StatusOr<bool> Contains(const Value& container, const Value& item, int line) {
  switch (container.kind()) {
    case Value::Kind::kUndefined:
      return false;  // Undefined iterates as empty
    case Value::Kind::kString:
      if (!item.is_string()) {
        return TemplateError(
            line, fmt::format("'in <string>' requires string as left operand, "
                              "not {}",
                              item.TypeName()));
      }
      return container.str().find(item.str()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.list()) {
        if (Equals(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.dict().Find(item.str()) != nullptr;
    default:
      return TemplateError(line, fmt::format("argument of type '{}' is not "
                                             "iterable",
                                             container.TypeName()));
  }
}

StatusOr<ValueList> Iterate(const Value& v, int line) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return ValueList{};
    case Value::Kind::kList:
      return v.list();
    case Value::Kind::kDict: {
      ValueList keys;
      keys.reserve(v.dict().size());
      for (const auto& entry : v.dict()) keys.emplace_back(entry.first);
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (char32_t c : text::Decode(v.str())) {
        std::string s;
        text::AppendUtf8(c, &s);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default:
      return TemplateError(
          line, fmt::format("'{}' object is not iterable", v.TypeName()));
  }
}

StatusOr<int64_t> Length(const Value& v, int line) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return int64_t{0};
    case Value::Kind::kString:
      return text::Length(v.str());
    case Value::Kind::kList:
      return static_cast<int64_t>(v.list().size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(v.dict().size());
    default:
      return TemplateError(
          line, fmt::format("object of type '{}' has no len()", v.TypeName()));
  }
}

StatusOr<Value> Slice(const Value& v, const Value& start, const Value& stop,
                      const Value& step, int line) {
  if (v.is_undefined()) return UndefinedError(line, v);
  if (!v.is_string() && !v.is_list()) {
    return Value::Undefined(
        fmt::format("'{}' object is not subscriptable", v.TypeName()));
  }
  for (const Value* bound : {&start, &stop, &step}) {
    if (!bound->is_none() && !bound->is_integral()) {
      return Value::Undefined(
          "slice indices must be integers or None");  // Jinja: TypeError
    }
  }
  const int64_t step_value = step.is_none() ? 1 : step.int_value();
  if (step_value == 0) return TemplateError(line, "slice step cannot be zero");
  const bool ascii = v.is_string() && text::IsAscii(v.str());
  std::u32string chars;
  if (v.is_string() && !ascii) chars = text::Decode(v.str());
  const int64_t length = v.is_list()
                             ? static_cast<int64_t>(v.list().size())
                             : (ascii ? static_cast<int64_t>(v.str().size())
                                      : static_cast<int64_t>(chars.size()));
  int64_t begin = start.is_none() ? 0 : start.int_value();
  int64_t end = stop.is_none() ? 0 : stop.int_value();
  AdjustIndices(length, &begin, &end, step_value, !start.is_none(),
                !stop.is_none());
  std::vector<int64_t> picks;
  for (int64_t i = begin; step_value > 0 ? i < end : i > end; i += step_value) {
    picks.push_back(i);
  }
  if (v.is_list()) {
    ValueList out;
    out.reserve(picks.size());
    for (int64_t i : picks) out.push_back(v.list()[i]);
    return v.is_tuple() ? Value::Tuple(std::move(out))
                        : Value::List(std::move(out));
  }
  std::string out;
  for (int64_t i : picks) {
    if (ascii) {
      out.push_back(v.str()[i]);
    } else {
      text::AppendUtf8(chars[i], &out);
    }
  }
  return Value(std::move(out));
}

}  // namespace tessera::jinja
