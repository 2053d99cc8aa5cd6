// Attribute and item access, and the str / dict / list methods templates
// call, as Jinja's ImmutableSandboxedEnvironment resolves them.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/render_budget.h"
#include "tokenizer/jinja/text.h"

namespace tessera::jinja {
namespace {

// Every method of Python's str; those not implemented below are errors when
// named rather than Undefined, so a template never silently loses output.
const std::set<std::string, std::less<>> kPythonStrMethods = {
    "capitalize",   "casefold",     "center",    "count",     "encode",
    "endswith",     "expandtabs",   "find",      "format",    "format_map",
    "index",        "isalnum",      "isalpha",   "isascii",   "isdecimal",
    "isdigit",      "isidentifier", "islower",   "isnumeric", "isprintable",
    "isspace",      "istitle",      "isupper",   "join",      "ljust",
    "lower",        "lstrip",       "maketrans", "partition", "removeprefix",
    "removesuffix", "replace",      "rfind",     "rindex",    "rjust",
    "rpartition",   "rsplit",       "rstrip",    "split",     "splitlines",
    "startswith",   "strip",        "swapcase",  "title",     "translate",
    "upper",        "zfill"};

const std::set<std::string, std::less<>> kStrMethods = {
    "capitalize",   "count",        "endswith",   "find",  "format", "isascii",
    "islower",      "isspace",      "isupper",    "join",  "lower",  "lstrip",
    "removeprefix", "removesuffix", "replace",    "rfind", "rsplit", "rstrip",
    "split",        "splitlines",   "startswith", "strip", "title",  "upper"};

// Methods that mutate, which Hugging Face's immutable sandbox refuses.
const std::set<std::string, std::less<>> kMutatingDictMethods = {
    "clear", "pop", "popitem", "setdefault", "update"};
const std::set<std::string, std::less<>> kMutatingListMethods = {
    "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"};

Status UnsafeError(int line, std::string_view attr, std::string_view type) {
  return TemplateError(
      line, fmt::format("access to attribute '{}' of '{}' object is unsafe: "
                        "Hugging Face renders chat templates in an immutable "
                        "sandbox (build a new value instead, or use a "
                        "namespace)",
                        attr, type));
}

StatusOr<std::string> StrArg(const Value& v, std::string_view what, int line) {
  if (!v.is_string()) {
    return TemplateError(line, fmt::format("{}: expected a string argument, "
                                           "got '{}'",
                                           what, v.TypeName()));
  }
  return v.str();
}

// A str argument or None (absent).
StatusOr<std::optional<std::string>> OptStrArg(const Value& v,
                                               std::string_view what,
                                               int line) {
  if (v.is_none()) return std::optional<std::string>();
  TSR_ASSIGN_OR_RETURN(std::string s, StrArg(v, what, line));
  return std::optional<std::string>(std::move(s));
}

StatusOr<int64_t> IntArg(const Value& v, std::string_view what, int line) {
  if (!v.is_integral()) {
    return TemplateError(line, fmt::format("{}: expected an integer argument, "
                                           "got '{}'",
                                           what, v.TypeName()));
  }
  return v.int_value();
}

// Clamps Python's optional start/end to [0, length] code points.
StatusOr<std::pair<int64_t, int64_t>> SliceRange(const Value& start,
                                            const Value& end, int64_t length,
                                            std::string_view what, int line) {
  auto clamp = [&](const Value& v, int64_t fallback) -> StatusOr<int64_t> {
    if (v.is_none()) return fallback;
    TSR_ASSIGN_OR_RETURN(int64_t i, IntArg(v, what, line));
    if (i < 0) i = std::max<int64_t>(0, i + length);
    return std::min(i, length);
  };
  TSR_ASSIGN_OR_RETURN(int64_t b, clamp(start, 0));
  TSR_ASSIGN_OR_RETURN(int64_t e, clamp(end, length));
  return std::make_pair(b, e);
}

Value StringList(std::vector<std::string> parts) {
  ValueList out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::List(std::move(out));
}

// str.format with automatic ({}), numbered ({0}) and named ({name}) fields
// and !r / !s conversions.
StatusOr<Value> Format(const std::string& fmt_str, const CallArgs& args) {
  const int line = args.line;
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt_str.size(); ++i) {
    const char c = fmt_str[i];
    if (c == '}') {
      if (i + 1 < fmt_str.size() && fmt_str[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      return TemplateError(line,
                           "str.format: single '}' encountered in "
                           "format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < fmt_str.size() && fmt_str[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = fmt_str.find('}', i);
    if (close == std::string::npos) {
      return TemplateError(line,
                           "str.format: single '{' encountered in "
                           "format string");
    }
    std::string field = fmt_str.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 0;
    if (const size_t colon = field.find(':'); colon != std::string::npos) {
      if (colon + 1 < field.size()) {
        return UnsupportedError(line,
                                "str.format: format specs ({:...}) are "
                                "not supported");
      }
      field.resize(colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size() ||
          (field[bang + 1] != 'r' && field[bang + 1] != 's')) {
        return TemplateError(line, "str.format: unknown conversion specifier");
      }
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find_first_of(".[") != std::string::npos) {
      return UnsupportedError(line,
                              "str.format: attribute and index fields "
                              "are not supported");
    }
    const Value* arg = nullptr;
    if (field.empty() || std::isdigit(static_cast<unsigned char>(field[0]))) {
      const size_t index = field.empty() ? auto_index++ : std::stoul(field);
      if (index >= args.positional.size()) {
        return TemplateError(line, fmt::format("str.format: replacement index "
                                               "{} out of range",
                                               index));
      }
      arg = &args.positional[index];
    } else {
      for (const auto& [name, value] : args.keyword) {
        if (name == field) arg = &value;
      }
      if (arg == nullptr) {
        return TemplateError(line, fmt::format("str.format: no argument named "
                                               "'{}'",
                                               field));
      }
    }
    out += conversion == 'r' ? arg->Repr() : arg->ToStr();
  }
  return Value(std::move(out));
}

StatusOr<Value> CallStrMethod(const std::string& name, const std::string& s,
                              const CallArgs& args) {
  const int line = args.line;
  const std::string what = "str." + name;
  if (name == "format") return Format(s, args);
  if (name == "upper" || name == "lower" || name == "title" ||
      name == "capitalize" || name == "isupper" || name == "islower" ||
      name == "isspace" || name == "isascii") {
    TSR_RETURN_IF_ERROR(BindArgs(what, args, {}).status());
    if (name == "upper") return Value(text::Upper(s));
    if (name == "lower") return Value(text::Lower(s));
    if (name == "title") return Value(text::Title(s));
    if (name == "capitalize") return Value(text::Capitalize(s));
    if (name == "isupper") return Value(text::IsUpperString(s));
    if (name == "islower") return Value(text::IsLowerString(s));
    if (name == "isascii") return Value(text::IsAscii(s));
    const std::u32string u = text::Decode(s);
    return Value(!u.empty() && std::all_of(u.begin(), u.end(), text::IsSpace));
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    TSR_ASSIGN_OR_RETURN(auto a,
                         BindArgs(what, args, {{"chars", Value::None()}}));
    TSR_ASSIGN_OR_RETURN(auto chars, OptStrArg(a[0], what, line));
    return Value(text::Strip(s, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    TSR_ASSIGN_OR_RETURN(
        auto a, BindArgs(what, args,
                         {{"sep", Value::None()}, {"maxsplit", Value(-1)}}));
    TSR_ASSIGN_OR_RETURN(auto sep, OptStrArg(a[0], what, line));
    TSR_ASSIGN_OR_RETURN(int64_t maxsplit, IntArg(a[1], what, line));
    if (sep && sep->empty())
      return TemplateError(line, what + ": empty separator");
    return StringList(name == "split" ? text::Split(s, sep, maxsplit)
                                      : text::RSplit(s, sep, maxsplit));
  }
  if (name == "splitlines") {
    TSR_ASSIGN_OR_RETURN(auto a,
                         BindArgs(what, args, {{"keepends", Value(false)}}));
    return StringList(text::SplitLines(s, a[0].Truthy()));
  }
  if (name == "startswith" || name == "endswith") {
    TSR_ASSIGN_OR_RETURN(auto a, BindArgs(what, args,
                                          {{"prefix", {}},
                                           {"start", Value::None()},
                                           {"end", Value::None()}}));
    TSR_ASSIGN_OR_RETURN(auto range,
                         SliceRange(a[1], a[2], text::Length(s), what, line));
    const std::string sub = (a[1].is_none() && a[2].is_none())
                                ? s
                                : text::Substr(s, range.first, range.second);
    ValueList candidates = a[0].is_tuple() ? a[0].list() : ValueList{a[0]};
    for (const Value& c : candidates) {
      TSR_ASSIGN_OR_RETURN(std::string affix, StrArg(c, what, line));
      const bool hit = name == "startswith"
                           ? sub.compare(0, affix.size(), affix) == 0
                           : sub.size() >= affix.size() &&
                                 sub.compare(sub.size() - affix.size(),
                                             affix.size(), affix) == 0;
      if (hit) return Value(true);
    }
    return Value(false);
  }
  if (name == "find" || name == "rfind" || name == "count") {
    TSR_ASSIGN_OR_RETURN(auto a, BindArgs(what, args,
                                          {{"sub", {}},
                                           {"start", Value::None()},
                                           {"end", Value::None()}}));
    TSR_ASSIGN_OR_RETURN(std::string sub, StrArg(a[0], what, line));
    TSR_ASSIGN_OR_RETURN(auto range,
                         SliceRange(a[1], a[2], text::Length(s), what, line));
    if (range.second < range.first) {
      return Value(int64_t{name == "count" ? 0 : -1});
    }
    const std::string hay = text::Substr(s, range.first, range.second);
    if (name == "count") return Value(text::Count(hay, sub));
    const int64_t at =
        name == "find" ? text::Find(hay, sub) : text::RFind(hay, sub);
    return Value(at < 0 ? at : at + range.first);
  }
  if (name == "replace") {
    TSR_ASSIGN_OR_RETURN(
        auto a,
        BindArgs(what, args, {{"old", {}}, {"new", {}}, {"count", Value(-1)}}));
    TSR_ASSIGN_OR_RETURN(std::string old_s, StrArg(a[0], what, line));
    TSR_ASSIGN_OR_RETURN(std::string new_s, StrArg(a[1], what, line));
    TSR_ASSIGN_OR_RETURN(int64_t count, IntArg(a[2], what, line));
    TSR_RETURN_IF_ERROR(
        CheckStringSize(text::ReplacedSize(s, old_s, new_s, count), line,
                        "the result of str.replace"));
    return Value(text::Replace(s, old_s, new_s, count));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    TSR_ASSIGN_OR_RETURN(auto a, BindArgs(what, args, {{"affix", {}}}));
    TSR_ASSIGN_OR_RETURN(std::string affix, StrArg(a[0], what, line));
    if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0) {
      return Value(s.substr(affix.size()));
    }
    if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0) {
      return Value(s.substr(0, s.size() - affix.size()));
    }
    return Value(s);
  }
  if (name == "join") {
    TSR_ASSIGN_OR_RETURN(auto a, BindArgs(what, args, {{"iterable", {}}}));
    TSR_ASSIGN_OR_RETURN(ValueList items, Iterate(a[0], line));
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        return TemplateError(line,
                             fmt::format("str.join: sequence item {}: "
                                         "expected str instance, {} found",
                                         i, items[i].TypeName()));
      }
      TSR_RETURN_IF_ERROR(CheckStringSize(
          out.size() + (i > 0 ? s.size() : 0) + items[i].str().size(), line,
          "the result of str.join"));
      if (i > 0) out += s;
      out += items[i].str();
    }
    return Value(std::move(out));
  }
  return UnsupportedError(line, fmt::format("string method '{}' is not "
                                            "supported",
                                            name));
}

StatusOr<Value> CallDictMethod(const std::string& name, const Value& self,
                               const CallArgs& args) {
  const std::string what = "dict." + name;
  if (name == "get") {
    TSR_ASSIGN_OR_RETURN(
        auto a,
        BindArgs(what, args, {{"key", {}}, {"default", Value::None()}}));
    if (!a[0].is_string()) return a[1];
    const Value* v = self.dict().Find(a[0].str());
    return v ? *v : a[1];
  }
  TSR_RETURN_IF_ERROR(BindArgs(what, args, {}).status());
  if (name == "copy") return self;
  ValueList out;
  for (const auto& [key, value] : self.dict()) {
    if (name == "keys") {
      out.emplace_back(key);
    } else if (name == "values") {
      out.push_back(value);
    } else {
      out.push_back(Value::Tuple({Value(key), value}));
    }
  }
  return Value::List(std::move(out));
}

StatusOr<Value> CallListMethod(const std::string& name, const Value& self,
                               const CallArgs& args) {
  const std::string what = "list." + name;
  if (name == "copy") {
    TSR_RETURN_IF_ERROR(BindArgs(what, args, {}).status());
    return self;
  }
  TSR_ASSIGN_OR_RETURN(auto a, BindArgs(what, args, {{"value", {}}}));
  int64_t count = 0;
  const ValueList& items = self.list();
  for (size_t i = 0; i < items.size(); ++i) {
    if (!Equals(items[i], a[0])) continue;
    if (name == "index") return Value(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") {
    return TemplateError(
        args.line, fmt::format("list.index: {} is not in list", a[0].Repr()));
  }
  return Value(count);
}

Value Method(std::string qualified_name,
             std::function<StatusOr<Value>(const CallArgs&)> fn) {
  return Value::Function(std::move(qualified_name), std::move(fn));
}

}  // namespace

StatusOr<Value> GetAttr(const Value& object, const std::string& name,
                        int line) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      return UndefinedError(line, object,
                            fmt::format("reading its attribute '{}'", name));
    case Value::Kind::kDict:
      if (name == "items" || name == "keys" || name == "values" ||
          name == "get" || name == "copy") {
        return Method("dict." + name, [name, object](const CallArgs& a) {
          return CallDictMethod(name, object, a);
        });
      }
      if (kMutatingDictMethods.count(name))
        return UnsafeError(line, name, "dict");
      if (const Value* v = object.dict().Find(name)) return *v;
      return Value::Undefined(
          fmt::format("'dict object' has no attribute '{}'", name));
    case Value::Kind::kNamespace:
      if (const Value* v = object.ns().attrs.Find(name)) return *v;
      return Value::Undefined(fmt::format("'{}' object has no attribute '{}'",
                                          object.ns().type_name, name));
    case Value::Kind::kString:
      if (kStrMethods.count(name)) {
        return Method("str." + name, [name, object](const CallArgs& a) {
          return CallStrMethod(name, object.str(), a);
        });
      }
      if (kPythonStrMethods.count(name)) {
        return UnsupportedError(line, fmt::format("string method '{}' is not "
                                                  "supported",
                                                  name));
      }
      break;
    case Value::Kind::kList:
      if (name == "count" || name == "index" ||
          (name == "copy" && !object.is_tuple())) {
        return Method(object.TypeName() + "." + name,
                      [name, object](const CallArgs& a) {
                        return CallListMethod(name, object, a);
                      });
      }
      if (!object.is_tuple() && kMutatingListMethods.count(name)) {
        return UnsafeError(line, name, "list");
      }
      break;
    default:
      break;
  }
  return Value::Undefined(fmt::format("'{} object' has no attribute '{}'",
                                      object.TypeName(), name));
}

StatusOr<Value> GetItem(const Value& object, const Value& key, int line) {
  if (object.is_undefined()) {
    return UndefinedError(line, object,
                          fmt::format("reading its item {}", key.Repr()));
  }
  if (object.is_dict() && key.is_string()) {
    if (const Value* v = object.dict().Find(key.str())) return *v;
  }
  if ((object.is_list() || object.is_string()) && key.is_integral()) {
    const bool ascii = object.is_string() && text::IsAscii(object.str());
    const int64_t length =
        object.is_list() ? static_cast<int64_t>(object.list().size())
                         : (ascii ? static_cast<int64_t>(object.str().size())
                                  : text::Length(object.str()));
    int64_t i = key.int_value();
    if (i < 0) i += length;
    if (i < 0 || i >= length) {
      return Value::Undefined(fmt::format("'{} object' has no element {}",
                                          object.TypeName(), key.int_value()));
    }
    if (object.is_list()) return object.list()[i];
    return Value(ascii ? object.str().substr(i, 1)
                       : text::Substr(object.str(), i, i + 1));
  }
  if (key.is_string()) return GetAttr(object, key.str(), line);
  return Value::Undefined(fmt::format("'{} object' has no element {}",
                                      object.TypeName(), key.Repr()));
}

}  // namespace tessera::jinja
