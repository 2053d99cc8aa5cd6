// Global functions of the chat template environment: Jinja's range,
// namespace and dict, and Hugging Face's raise_exception and strftime_now.
#include <fmt/format.h>

#include <ctime>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/render_budget.h"

namespace tessera::jinja {
namespace {

// Jinja's sandbox refuses larger ranges (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

StatusOr<Value> Range(const CallArgs& args) {
  if (!args.keyword.empty()) {
    return TemplateError(args.line, "range() takes no keyword arguments");
  }
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) {
    return TemplateError(args.line, fmt::format("range expected 1 to 3 "
                                                "arguments, got {}",
                                                p.size()));
  }
  for (const Value& v : p) {
    if (!v.is_integral()) {
      return TemplateError(args.line, fmt::format("range(): '{}' object "
                                                  "cannot be interpreted as an "
                                                  "integer",
                                                  v.TypeName()));
    }
  }
  const int64_t start = p.size() == 1 ? 0 : p[0].int_value();
  const int64_t stop = p.size() == 1 ? p[0].int_value() : p[1].int_value();
  const int64_t step = p.size() == 3 ? p[2].int_value() : 1;
  if (step == 0)
    return TemplateError(args.line, "range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) == kMaxRange) {
      return TemplateError(args.line,
                           fmt::format("range too big: the sandbox allows at "
                                       "most {} items",
                                       kMaxRange));
    }
    out.emplace_back(i);
  }
  // Building the list is work of its own (range() in a loop body).
  if (RenderBudget* budget = RenderBudget::Current()) {
    TSR_RETURN_IF_ERROR(
        budget->Spend(static_cast<int64_t>(out.size()), args.line));
  }
  return Value::List(std::move(out));
}

// Python's dict(*args, **kwargs) with string keys: an optional mapping or
// sequence of pairs, then keyword arguments.
StatusOr<ValueDict> BuildDict(std::string_view what, const CallArgs& args) {
  ValueDict out;
  if (args.positional.size() > 1) {
    return TemplateError(args.line, fmt::format("{} expected at most 1 "
                                                "positional argument, got {}",
                                                what, args.positional.size()));
  }
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      out = src.dict();
    } else if (src.is_namespace()) {
      out = src.ns().attrs;
    } else {
      TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(src, args.line));
      for (const Value& item : items) {
        if (!item.is_list() || item.list().size() != 2 ||
            !item.list()[0].is_string()) {
          return TemplateError(args.line,
                               fmt::format("{}: each item must be a (string "
                                           "key, value) pair",
                                           what));
        }
        out.Set(item.list()[0].str(), item.list()[1]);
      }
    }
  }
  for (const auto& [key, value] : args.keyword) out.Set(key, value);
  return out;
}

StatusOr<Value> MakeNamespace(const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(ValueDict attrs, BuildDict("namespace()", args));
  return Value::NewNamespace(std::move(attrs), /*assignable=*/true,
                             "Namespace");
}

StatusOr<Value> Dict(const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(ValueDict d, BuildDict("dict()", args));
  return Value::Dict(std::move(d));
}

StatusOr<Value> RaiseException(const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a,
                       BindArgs("raise_exception()", args, {{"message", {}}}));
  return TemplateError(args.line, fmt::format("the chat template raised an "
                                              "error: {}",
                                              a[0].ToStr()));
}

// Hugging Face: datetime.now().strftime(format), in local time.
StatusOr<Value> StrftimeNow(const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a,
                       BindArgs("strftime_now()", args, {{"format", {}}}));
  if (!a[0].is_string()) {
    return TemplateError(args.line, "strftime_now() needs a format string");
  }
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (a[0].str().empty()) return Value("");
  std::string buf(256 + a[0].str().size() * 8, '\0');
  const size_t n =
      std::strftime(buf.data(), buf.size(), a[0].str().c_str(), &local);
  if (n == 0) {
    return TemplateError(args.line,
                         "strftime_now(): the formatted date is "
                         "empty or too long");
  }
  buf.resize(n);
  return Value(std::move(buf));
}

NativeFunction Unsupported(std::string name) {
  return [name](const CallArgs& args) -> StatusOr<Value> {
    return UnsupportedError(args.line,
                            fmt::format("global function '{}' is not "
                                        "supported",
                                        name));
  };
}

}  // namespace

const ValueDict& Globals() {
  static const ValueDict* globals = [] {
    auto* g = new ValueDict();
    g->Set("range", Value::Function("range", Range));
    g->Set("namespace", Value::Function("namespace", MakeNamespace));
    g->Set("dict", Value::Function("dict", Dict));
    g->Set("raise_exception",
           Value::Function("raise_exception", RaiseException));
    g->Set("strftime_now", Value::Function("strftime_now", StrftimeNow));
    for (const char* name : {"lipsum", "cycler", "joiner"}) {
      g->Set(name, Value::Function(name, Unsupported(name)));
    }
    return g;
  }();
  return *globals;
}

}  // namespace tessera::jinja
