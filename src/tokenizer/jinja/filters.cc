// Jinja's built-in filters (the subset chat templates use), plus Hugging
// Face's tojson.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/json_dump.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/render_budget.h"
#include "tokenizer/jinja/text.h"

namespace tessera::jinja {
namespace {

using FilterFn = StatusOr<Value> (*)(const Value& input, const CallArgs& args);

std::string FilterLabel(std::string_view name) {
  return fmt::format("filter '{}'", name);
}

// Jinja's make_attrgetter: "a.b.0" looked up item by item (getitem
// semantics, so `items` finds a key, not dict.items).
StatusOr<Value> GetPath(const Value& item, const Value& attribute, int line) {
  if (attribute.is_integral()) return GetItem(item, attribute, line);
  Value current = item;
  for (const std::string& part :
       text::Split(attribute.ToStr(), std::string("."), -1)) {
    const auto index = text::ParseInt(part, 10);
    const bool numeric = index && !part.empty() &&
                         std::all_of(part.begin(), part.end(), ::isdigit);
    TSR_ASSIGN_OR_RETURN(
        current, GetItem(current, numeric ? Value(*index) : Value(part), line));
  }
  return current;
}

// The sort key of sort/unique/dictsort/min/max: lower-cased when the
// comparison ignores case.
Value CaseKey(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(text::Lower(v.str()));
  return v;
}

// A stable sort by `keys` that reports the first unorderable pair.
Status SortByKeys(std::vector<size_t>* order, const ValueList& keys,
                  bool reverse, int line) {
  Status error;
  std::stable_sort(order->begin(), order->end(), [&](size_t a, size_t b) {
    if (!error.ok()) return false;
    auto c = Order(keys[a], keys[b], line);
    if (!c.ok()) {
      error = c.status();
      return false;
    }
    return reverse ? *c > 0 : *c < 0;
  });
  return error;
}

StatusOr<Value> Length(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("length"), args, {}).status());
  TSR_ASSIGN_OR_RETURN(int64_t n, jinja::Length(in, args.line));
  return Value(n);
}

StatusOr<Value> StringOp(const Value& in, const CallArgs& args,
                         std::string_view name,
                         std::string (*op)(std::string_view)) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel(name), args, {}).status());
  return Value(op(in.ToStr()));
}

StatusOr<Value> Upper(const Value& in, const CallArgs& args) {
  return StringOp(in, args, "upper", text::Upper);
}
StatusOr<Value> Lower(const Value& in, const CallArgs& args) {
  return StringOp(in, args, "lower", text::Lower);
}
StatusOr<Value> Capitalize(const Value& in, const CallArgs& args) {
  return StringOp(in, args, "capitalize", text::Capitalize);
}

// Jinja's title filter: each run after "-", whitespace, "(", "{", "[" or "<"
// gets its first character upper-cased and the rest lower-cased.
StatusOr<Value> Title(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("title"), args, {}).status());
  auto is_sep = [](char32_t c) {
    return text::IsSpace(c) || c == U'-' || c == U'(' || c == U'{' ||
           c == U'[' || c == U'<';
  };
  const std::u32string u = text::Decode(in.ToStr());
  std::string out;
  size_t i = 0;
  while (i < u.size()) {
    const bool sep = is_sep(u[i]);
    size_t j = i;
    while (j < u.size() && is_sep(u[j]) == sep) ++j;
    const std::string chunk =
        text::Encode(std::u32string_view(u).substr(i, j - i));
    const std::string first = text::Encode(std::u32string_view(u).substr(i, 1));
    out += text::Upper(first) + text::Lower(chunk.substr(first.size()));
    i = j;
  }
  return Value(std::move(out));
}

StatusOr<Value> Trim(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(
      auto a, BindArgs(FilterLabel("trim"), args, {{"chars", Value::None()}}));
  std::optional<std::string> chars;
  if (!a[0].is_none()) chars = a[0].ToStr();
  return Value(text::Strip(in.ToStr(), chars, true, true));
}

StatusOr<Value> String(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("string"), args, {}).status());
  return Value(in.ToStr());
}

StatusOr<Value> Safe(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("safe"), args, {}).status());
  return Value(in.ToStr());
}

StatusOr<Value> Escape(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("escape"), args, {}).status());
  return Value(text::HtmlEscape(in.ToStr()));
}

StatusOr<Value> Default(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(FilterLabel("default"), args,
                                        {{"default_value", Value("")},
                                         {"boolean", Value(false)}}));
  if (in.is_undefined() || (a[1].Truthy() && !in.Truthy())) return a[0];
  return in;
}

StatusOr<Value> First(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("first"), args, {}).status());
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  if (items.empty())
    return Value::Undefined("No first item, sequence was empty.");
  return items.front();
}

StatusOr<Value> Last(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("last"), args, {}).status());
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  if (items.empty())
    return Value::Undefined("No last item, sequence was empty.");
  return items.back();
}

StatusOr<Value> List(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("list"), args, {}).status());
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  return Value::List(std::move(items));
}

StatusOr<Value> Items(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("items"), args, {}).status());
  if (in.is_undefined()) return Value::List({});
  if (!in.is_dict()) {
    return TemplateError(args.line,
                         "filter 'items': can only get item pairs "
                         "from a mapping");
  }
  ValueList out;
  for (const auto& [key, value] : in.dict()) {
    out.push_back(Value::Tuple({Value(key), value}));
  }
  return Value::List(std::move(out));
}

StatusOr<Value> Reverse(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("reverse"), args, {}).status());
  if (in.is_string()) {
    std::u32string u = text::Decode(in.str());
    std::reverse(u.begin(), u.end());
    return Value(text::Encode(u));
  }
  if (!in.is_list() && !in.is_dict() && !in.is_undefined()) {
    return TemplateError(args.line,
                         "filter 'reverse': argument must be "
                         "iterable in order to be reversed");
  }
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  std::reverse(items.begin(), items.end());
  return Value::List(std::move(items));
}

StatusOr<Value> Join(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(
      auto a, BindArgs(FilterLabel("join"), args,
                       {{"d", Value("")}, {"attribute", Value::None()}}));
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  const std::string sep = a[0].ToStr();
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    Value item = items[i];
    if (!a[1].is_none()) {
      TSR_ASSIGN_OR_RETURN(item, GetPath(item, a[1], args.line));
    }
    const std::string piece = item.ToStr();
    TSR_RETURN_IF_ERROR(
        CheckStringSize(out.size() + (i > 0 ? sep.size() : 0) + piece.size(),
                        args.line, "the joined string"));
    if (i > 0) out += sep;
    out += piece;
  }
  return Value(std::move(out));
}

StatusOr<Value> Replace(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(
      auto a, BindArgs(FilterLabel("replace"), args,
                       {{"old", {}}, {"new", {}}, {"count", Value::None()}}));
  int64_t count = -1;
  if (!a[2].is_none()) {
    if (!a[2].is_integral()) {
      return TemplateError(args.line,
                           "filter 'replace': count must be an "
                           "integer");
    }
    count = a[2].int_value();
  }
  const std::string s = in.ToStr(), old_s = a[0].ToStr(), new_s = a[1].ToStr();
  TSR_RETURN_IF_ERROR(
      CheckStringSize(text::ReplacedSize(s, old_s, new_s, count), args.line,
                      "the result of 'replace'"));
  return Value(text::Replace(s, old_s, new_s, count));
}

StatusOr<Value> Int(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a,
                       BindArgs(FilterLabel("int"), args,
                                {{"default", Value(0)}, {"base", Value(10)}}));
  if (in.is_undefined()) return UndefinedError(args.line, in);
  if (in.is_integral()) return Value(in.int_value());
  if (in.is_float()) {
    const double d = in.number_value();
    if (std::isnan(d)) return a[0];
    if (std::isinf(d) || std::fabs(d) >= 9.2e18) {
      return TemplateError(args.line, "filter 'int': value out of range");
    }
    return Value(static_cast<int64_t>(d));
  }
  if (in.is_string()) {
    const int base =
        a[1].is_integral() ? static_cast<int>(a[1].int_value()) : 10;
    if (const auto i = text::ParseInt(in.str(), base)) return Value(*i);
    if (const auto d = text::ParseFloat(in.str())) {
      if (std::isfinite(*d) && std::fabs(*d) < 9.2e18) {
        return Value(static_cast<int64_t>(*d));
      }
    }
  }
  return a[0];
}

StatusOr<Value> Float(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(
      auto a, BindArgs(FilterLabel("float"), args, {{"default", Value(0.0)}}));
  if (in.is_undefined()) return UndefinedError(args.line, in);
  if (in.is_number()) return Value(in.number_value());
  if (in.is_string()) {
    if (const auto d = text::ParseFloat(in.str())) return Value(*d);
  }
  return a[0];
}

StatusOr<Value> Abs(const Value& in, const CallArgs& args) {
  TSR_RETURN_IF_ERROR(BindArgs(FilterLabel("abs"), args, {}).status());
  if (in.is_float()) return Value(std::fabs(in.number_value()));
  if (in.is_integral()) {
    if (in.int_value() == std::numeric_limits<int64_t>::min()) {
      return TemplateError(args.line, "integer overflow");
    }
    return Value(in.int_value() < 0 ? -in.int_value() : in.int_value());
  }
  if (in.is_undefined()) return UndefinedError(args.line, in);
  return TemplateError(args.line, fmt::format("bad operand type for abs(): "
                                              "'{}'",
                                              in.TypeName()));
}

// Python's round(x, n): correctly rounded, ties to even.
double RoundHalfEven(double x, int64_t precision) {
  if (!std::isfinite(x)) return x;
  if (precision < 0) {
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return std::nearbyint(x / scale) * scale;
  }
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%.*f",
                static_cast<int>(std::min<int64_t>(precision, 300)), x);
  return std::strtod(buf, nullptr);
}

StatusOr<Value> Round(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(
      auto a, BindArgs(FilterLabel("round"), args,
                       {{"precision", Value(0)}, {"method", Value("common")}}));
  if (in.is_undefined()) return UndefinedError(args.line, in);
  if (!in.is_number() || !a[0].is_integral()) {
    return TemplateError(args.line,
                         "filter 'round' needs a number and an "
                         "integer precision");
  }
  const int64_t precision = a[0].int_value();
  const std::string method = a[1].ToStr();
  if (method == "common") {
    if (in.is_integral()) {  // Python keeps an int an int
      if (precision >= 0) return Value(in.int_value());
      return Value(
          static_cast<int64_t>(RoundHalfEven(in.number_value(), precision)));
    }
    return Value(RoundHalfEven(in.number_value(), precision));
  }
  if (method != "ceil" && method != "floor") {
    return TemplateError(args.line,
                         "filter 'round': method must be 'common', "
                         "'ceil' or 'floor'");
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = in.number_value() * scale;
  return Value((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) /
               scale);
}

StatusOr<Value> Indent(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(FilterLabel("indent"), args,
                                        {{"width", Value(4)},
                                         {"first", Value(false)},
                                         {"blank", Value(false)}}));
  std::string indention;
  if (a[0].is_string()) {
    indention = a[0].str();
  } else if (a[0].is_integral()) {
    indention.assign(std::max<int64_t>(0, a[0].int_value()), ' ');
  } else {
    return TemplateError(args.line,
                         "filter 'indent': width must be an "
                         "integer or a string");
  }
  // As Jinja: a newline is appended so splitlines() keeps a trailing line.
  const std::vector<std::string> lines =
      text::SplitLines(in.ToStr() + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) {
      out += "\n";
      if (a[2].Truthy() || !lines[i].empty()) out += indention;
    }
    out += lines[i];
  }
  if (a[1].Truthy()) out = indention + out;
  return Value(std::move(out));
}

StatusOr<Value> ToJson(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(FilterLabel("tojson"), args,
                                        {{"ensure_ascii", Value(false)},
                                         {"indent", Value::None()},
                                         {"separators", Value::None()},
                                         {"sort_keys", Value(false)}}));
  JsonDumpOptions options;
  options.ensure_ascii = a[0].Truthy();
  if (a[1].is_integral()) {
    options.indent = std::string(std::max<int64_t>(0, a[1].int_value()), ' ');
  } else if (a[1].is_string()) {
    options.indent = a[1].str();
  } else if (!a[1].is_none()) {
    return TemplateError(args.line,
                         "filter 'tojson': indent must be an "
                         "integer, a string or none");
  }
  if (options.indent) options.item_separator = ",";
  if (!a[2].is_none()) {
    if (!a[2].is_list() || a[2].list().size() != 2 ||
        !a[2].list()[0].is_string() || !a[2].list()[1].is_string()) {
      return TemplateError(args.line,
                           "filter 'tojson': separators must be a "
                           "pair of strings");
    }
    options.item_separator = a[2].list()[0].str();
    options.key_separator = a[2].list()[1].str();
  }
  options.sort_keys = a[3].Truthy();
  TSR_ASSIGN_OR_RETURN(std::string json, JsonDumps(in, options, args.line));
  return Value(std::move(json));
}

// select / reject / selectattr / rejectattr.
StatusOr<Value> SelectOrReject(const Value& in, const CallArgs& args,
                               bool by_attribute, bool select) {
  const std::string name =
      std::string(select ? "select" : "reject") + (by_attribute ? "attr" : "");
  size_t next = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) {
      return TemplateError(args.line,
                           fmt::format("filter '{}' needs an attribute", name));
    }
    attribute = args.positional[next++];
  }
  if (!args.keyword.empty()) {
    return TemplateError(args.line, fmt::format("filter '{}' takes no keyword "
                                                "arguments",
                                                name));
  }
  std::string test;
  if (next < args.positional.size()) test = args.positional[next++].ToStr();
  CallArgs test_args;
  test_args.line = args.line;
  test_args.positional.assign(args.positional.begin() + next,
                              args.positional.end());
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  ValueList out;
  for (const Value& item : items) {
    Value subject = item;
    if (by_attribute) {
      TSR_ASSIGN_OR_RETURN(subject, GetPath(item, attribute, args.line));
    }
    bool passed = subject.Truthy();
    if (!test.empty()) {
      TSR_ASSIGN_OR_RETURN(passed, ApplyTest(test, subject, test_args));
    }
    if (passed == select) out.push_back(item);
  }
  return Value::List(std::move(out));
}

StatusOr<Value> Select(const Value& in, const CallArgs& args) {
  return SelectOrReject(in, args, false, true);
}
StatusOr<Value> Reject(const Value& in, const CallArgs& args) {
  return SelectOrReject(in, args, false, false);
}
StatusOr<Value> SelectAttr(const Value& in, const CallArgs& args) {
  return SelectOrReject(in, args, true, true);
}
StatusOr<Value> RejectAttr(const Value& in, const CallArgs& args) {
  return SelectOrReject(in, args, true, false);
}

StatusOr<Value> Map(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  ValueList out;
  out.reserve(items.size());
  if (args.positional.empty()) {
    TSR_ASSIGN_OR_RETURN(
        auto a, BindArgs(FilterLabel("map"), args,
                         {{"attribute", {}}, {"default", Value::None()}}));
    for (const Value& item : items) {
      TSR_ASSIGN_OR_RETURN(Value v, GetPath(item, a[0], args.line));
      out.push_back(v.is_undefined() && !a[1].is_none() ? a[1] : v);
    }
    return Value::List(std::move(out));
  }
  const std::string filter = args.positional[0].ToStr();
  CallArgs filter_args;
  filter_args.line = args.line;
  filter_args.positional.assign(args.positional.begin() + 1,
                                args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : items) {
    TSR_ASSIGN_OR_RETURN(Value v, ApplyFilter(filter, item, filter_args));
    out.push_back(std::move(v));
  }
  return Value::List(std::move(out));
}

// Keys for sort / unique / min / max: an item, or the attribute(s) named,
// with case folding.
StatusOr<Value> KeyOf(const Value& item, const Value& attribute,
                      bool case_sensitive, int line) {
  if (attribute.is_none()) return CaseKey(item, case_sensitive);
  if (attribute.is_string() && attribute.str().find(',') != std::string::npos) {
    ValueList parts;
    for (const std::string& name :
         text::Split(attribute.str(), std::string(","), -1)) {
      TSR_ASSIGN_OR_RETURN(
          Value v,
          GetPath(item, Value(text::Strip(name, std::nullopt, true, true)),
                  line));
      parts.push_back(CaseKey(v, case_sensitive));
    }
    return Value::List(std::move(parts));
  }
  TSR_ASSIGN_OR_RETURN(Value v, GetPath(item, attribute, line));
  return CaseKey(v, case_sensitive);
}

StatusOr<Value> Sort(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(FilterLabel("sort"), args,
                                        {{"reverse", Value(false)},
                                         {"case_sensitive", Value(false)},
                                         {"attribute", Value::None()}}));
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  ValueList keys;
  for (const Value& item : items) {
    TSR_ASSIGN_OR_RETURN(Value k, KeyOf(item, a[2], a[1].Truthy(), args.line));
    keys.push_back(std::move(k));
  }
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  TSR_RETURN_IF_ERROR(SortByKeys(&order, keys, a[0].Truthy(), args.line));
  ValueList out;
  for (size_t i : order) out.push_back(items[i]);
  return Value::List(std::move(out));
}

StatusOr<Value> Unique(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(FilterLabel("unique"), args,
                                        {{"case_sensitive", Value(false)},
                                         {"attribute", Value::None()}}));
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  ValueList seen, out;
  for (const Value& item : items) {
    TSR_ASSIGN_OR_RETURN(Value k, KeyOf(item, a[1], a[0].Truthy(), args.line));
    if (std::any_of(seen.begin(), seen.end(),
                    [&](const Value& s) { return Equals(s, k); })) {
      continue;
    }
    seen.push_back(std::move(k));
    out.push_back(item);
  }
  return Value::List(std::move(out));
}

StatusOr<Value> MinMax(const Value& in, const CallArgs& args, bool max) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(FilterLabel(max ? "max" : "min"), args,
                                        {{"case_sensitive", Value(false)},
                                         {"attribute", Value::None()}}));
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  if (items.empty()) {
    return Value::Undefined(
        fmt::format("No aggregated item, sequence was "
                    "empty."));
  }
  size_t best = 0;
  TSR_ASSIGN_OR_RETURN(Value best_key,
                       KeyOf(items[0], a[1], a[0].Truthy(), args.line));
  for (size_t i = 1; i < items.size(); ++i) {
    TSR_ASSIGN_OR_RETURN(Value k,
                         KeyOf(items[i], a[1], a[0].Truthy(), args.line));
    TSR_ASSIGN_OR_RETURN(int c, Order(k, best_key, args.line));
    if (max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

StatusOr<Value> Min(const Value& in, const CallArgs& args) {
  return MinMax(in, args, false);
}
StatusOr<Value> Max(const Value& in, const CallArgs& args) {
  return MinMax(in, args, true);
}

StatusOr<Value> Sum(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(
      auto a, BindArgs(FilterLabel("sum"), args,
                       {{"attribute", Value::None()}, {"start", Value(0)}}));
  TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(in, args.line));
  Value total = a[1];
  for (const Value& item : items) {
    Value v = item;
    if (!a[0].is_none()) {
      TSR_ASSIGN_OR_RETURN(v, GetPath(item, a[0], args.line));
    }
    TSR_ASSIGN_OR_RETURN(total,
                         ApplyBinary(BinaryOp::kAdd, total, v, args.line));
  }
  return total;
}

StatusOr<Value> DictSort(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(FilterLabel("dictsort"), args,
                                        {{"case_sensitive", Value(false)},
                                         {"by", Value("key")},
                                         {"reverse", Value(false)}}));
  if (!in.is_dict()) {
    return TemplateError(args.line, "filter 'dictsort' needs a mapping");
  }
  const std::string by = a[1].ToStr();
  if (by != "key" && by != "value") {
    return TemplateError(args.line,
                         "filter 'dictsort': by must be 'key' or "
                         "'value'");
  }
  ValueList pairs, keys;
  for (const auto& [key, value] : in.dict()) {
    pairs.push_back(Value::Tuple({Value(key), value}));
    keys.push_back(CaseKey(by == "key" ? Value(key) : value, a[0].Truthy()));
  }
  std::vector<size_t> order(pairs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  TSR_RETURN_IF_ERROR(SortByKeys(&order, keys, a[2].Truthy(), args.line));
  ValueList out;
  for (size_t i : order) out.push_back(pairs[i]);
  return Value::List(std::move(out));
}

StatusOr<Value> Attr(const Value& in, const CallArgs& args) {
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(FilterLabel("attr"), args, {{"name", {}}}));
  const std::string name = a[0].ToStr();
  // Python getattr only: a dict's keys are not attributes, its methods are.
  static const std::set<std::string, std::less<>> kDictAttributes = {
      "items", "keys", "values",  "get",        "copy",
      "clear", "pop",  "popitem", "setdefault", "update"};
  if (in.is_dict() && !kDictAttributes.count(name)) {
    return Value::Undefined(
        fmt::format("'dict object' has no attribute '{}'", name));
  }
  return GetAttr(in, name, args.line);
}

const std::map<std::string_view, FilterFn>& Filters() {
  static const auto* filters = new std::map<std::string_view, FilterFn>{
      {"abs", Abs},
      {"attr", Attr},
      {"capitalize", Capitalize},
      {"count", Length},
      {"d", Default},
      {"default", Default},
      {"dictsort", DictSort},
      {"e", Escape},
      {"escape", Escape},
      {"first", First},
      {"float", Float},
      {"forceescape", Escape},
      {"indent", Indent},
      {"int", Int},
      {"items", Items},
      {"join", Join},
      {"last", Last},
      {"length", Length},
      {"list", List},
      {"lower", Lower},
      {"map", Map},
      {"max", Max},
      {"min", Min},
      {"reject", Reject},
      {"rejectattr", RejectAttr},
      {"replace", Replace},
      {"reverse", Reverse},
      {"round", Round},
      {"safe", Safe},
      {"select", Select},
      {"selectattr", SelectAttr},
      {"sort", Sort},
      {"string", String},
      {"sum", Sum},
      {"title", Title},
      {"tojson", ToJson},
      {"trim", Trim},
      {"unique", Unique},
      {"upper", Upper},
  };
  return *filters;
}

}  // namespace

bool HasFilter(std::string_view name) { return Filters().count(name) > 0; }

StatusOr<Value> ApplyFilter(std::string_view name, const Value& input,
                            const CallArgs& args) {
  const auto it = Filters().find(name);
  if (it == Filters().end()) {
    return UnsupportedError(args.line,
                            fmt::format("filter '{}' is not supported", name));
  }
  return it->second(input, args);
}

}  // namespace tessera::jinja
