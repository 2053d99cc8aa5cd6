// Jinja's built-in tests (`x is defined`, `n is divisibleby 3`, ...).
#include <fmt/format.h>

#include <map>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/text.h"

namespace tessera::jinja {
namespace {

using TestFn = StatusOr<bool> (*)(const Value& in, const CallArgs& args);

std::string TestLabel(std::string_view name) {
  return fmt::format("test '{}'", name);
}

// Tests that look at the value alone.
using Predicate = bool (*)(const Value& in);

bool IsDefined(const Value& v) { return !v.is_undefined(); }
bool IsUndefined(const Value& v) { return v.is_undefined(); }
bool IsNone(const Value& v) { return v.is_none(); }
bool IsBoolean(const Value& v) { return v.is_bool(); }
bool IsTrue(const Value& v) { return v.is_bool() && v.bool_value(); }
bool IsFalse(const Value& v) { return v.is_bool() && !v.bool_value(); }
bool IsInteger(const Value& v) { return v.is_int(); }
bool IsFloat(const Value& v) { return v.is_float(); }
bool IsNumber(const Value& v) { return v.is_number(); }
bool IsString(const Value& v) { return v.is_string(); }
bool IsMapping(const Value& v) { return v.is_dict(); }
// Undefined iterates (as empty) and has a length in Jinja.
bool IsIterable(const Value& v) {
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool IsCallable(const Value& v) { return v.is_callable(); }
bool IsEscaped(const Value&) { return false; }  // no Markup values here
bool IsFilterName(const Value& v) {
  return v.is_string() && HasFilter(v.str());
}
bool IsTestName(const Value& v) { return v.is_string() && HasTest(v.str()); }
bool IsLower(const Value& v) { return text::IsLowerString(v.ToStr()); }
bool IsUpper(const Value& v) { return text::IsUpperString(v.ToStr()); }

StatusOr<bool> Parity(const Value& in, const CallArgs& args, bool want_even) {
  TSR_RETURN_IF_ERROR(
      BindArgs(TestLabel(want_even ? "even" : "odd"), args, {}).status());
  if (in.is_undefined()) return UndefinedError(args.line, in);
  if (!in.is_number()) {
    return TemplateError(
        args.line, fmt::format("test '{}' needs a number, got "
                               "'{}'",
                               want_even ? "even" : "odd", in.TypeName()));
  }
  TSR_ASSIGN_OR_RETURN(Value mod,
                       ApplyBinary(BinaryOp::kMod, in, Value(2), args.line));
  return Equals(mod, Value(want_even ? 0 : 1));
}

StatusOr<bool> Even(const Value& in, const CallArgs& args) {
  return Parity(in, args, true);
}
StatusOr<bool> Odd(const Value& in, const CallArgs& args) {
  return Parity(in, args, false);
}

StatusOr<bool> DivisibleBy(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a,
                       BindArgs(TestLabel("divisibleby"), args, {{"num", {}}}));
  TSR_ASSIGN_OR_RETURN(Value mod,
                       ApplyBinary(BinaryOp::kMod, in, a[0], args.line));
  return Equals(mod, Value(0));
}

template <CompareOp kOp>
StatusOr<bool> Compare(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(
      auto a, BindArgs(fmt::format("test '{}'", CompareOpSymbol(kOp)), args,
                       {{"other", {}}}));
  return ApplyCompare(kOp, in, a[0], args.line);
}

StatusOr<bool> SameAs(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(TestLabel("sameas"), args, {{"other", {}}}));
  return in.SameAs(a[0]);
}

const std::map<std::string_view, Predicate>& Predicates() {
  static const auto* predicates = new std::map<std::string_view, Predicate>{
      {"defined", IsDefined},   {"undefined", IsUndefined},
      {"none", IsNone},         {"boolean", IsBoolean},
      {"true", IsTrue},         {"false", IsFalse},
      {"integer", IsInteger},   {"float", IsFloat},
      {"number", IsNumber},     {"string", IsString},
      {"mapping", IsMapping},   {"iterable", IsIterable},
      {"callable", IsCallable}, {"escaped", IsEscaped},
      {"lower", IsLower},       {"upper", IsUpper},
      {"sequence", IsIterable}, {"filter", IsFilterName},
      {"test", IsTestName},
  };
  return *predicates;
}

const std::map<std::string_view, TestFn>& Tests() {
  static const auto* tests = new std::map<std::string_view, TestFn>{

      {"even", Even},
      {"odd", Odd},
      {"divisibleby", DivisibleBy},
      {"eq", Compare<CompareOp::kEq>},
      {"equalto", Compare<CompareOp::kEq>},
      {"==", Compare<CompareOp::kEq>},
      {"ne", Compare<CompareOp::kNe>},
      {"!=", Compare<CompareOp::kNe>},
      {"lt", Compare<CompareOp::kLt>},
      {"lessthan", Compare<CompareOp::kLt>},
      {"<", Compare<CompareOp::kLt>},
      {"le", Compare<CompareOp::kLe>},
      {"<=", Compare<CompareOp::kLe>},
      {"gt", Compare<CompareOp::kGt>},
      {"greaterthan", Compare<CompareOp::kGt>},
      {">", Compare<CompareOp::kGt>},
      {"ge", Compare<CompareOp::kGe>},
      {">=", Compare<CompareOp::kGe>},
      {"in", Compare<CompareOp::kIn>},
      {"sameas", SameAs},

  };
  return *tests;
}

}  // namespace

bool HasTest(std::string_view name) {
  return Predicates().count(name) > 0 || Tests().count(name) > 0;
}

StatusOr<bool> ApplyTest(std::string_view name, const Value& input,
                         const CallArgs& args) {
  if (const auto p = Predicates().find(name); p != Predicates().end()) {
    TSR_RETURN_IF_ERROR(BindArgs(TestLabel(name), args, {}).status());
    return p->second(input);
  }
  const auto it = Tests().find(name);
  if (it == Tests().end()) {
    return UnsupportedError(args.line,
                            fmt::format("test '{}' is not supported", name));
  }
  return it->second(input, args);
}

}  // namespace tessera::jinja
