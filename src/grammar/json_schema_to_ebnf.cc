#include "grammar/json_schema_to_ebnf.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "grammar/regex_to_ebnf.h"

namespace tessera::grammar {
namespace {

using Json = nlohmann::ordered_json;

// Shared rules. `ws` between tokens: nothing, one space, or one newline and
// an indentation (pretty-printed JSON) — never a run of blank lines a model
// could pad with for ever.
constexpr const char* kBaseRules = R"(
ws ::= " "? | "\n" [ ]{0,20}
json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" ws ( json-string ws ":" ws json-value ( ws "," ws json-string ws ":" ws json-value )* ws )? "}"
json-array ::= "[" ws ( json-value ( ws "," ws json-value )* ws )? "]"
json-string ::= "\"" json-char* "\""
json-char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
json-integer ::= "-"? ( "0" | [1-9] [0-9]{0,18} )
json-number ::= json-integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
json-nonneg-number ::= ( "0" | [1-9] [0-9]{0,18} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
)";

const std::set<std::string>& Annotations() {
  static const std::set<std::string> keys = {
      "title",    "description", "default",  "examples", "$schema",
      "$id",      "$comment",    "deprecated", "readOnly", "writeOnly",
      "strict",   "name",        "$defs",    "definitions", "format_hint",
      "$anchor"};
  return keys;
}

// Integer ranges as EBNF: digit patterns for [a, b] of equal length.
void SameLength(const std::string& a, const std::string& b,
                std::vector<std::string>* out, const std::string& prefix) {
  const size_t n = a.size();
  if (n == 1) {
    out->push_back(prefix + (a == b ? EbnfLiteral(a)
                                    : fmt::format("[{}-{}]", a, b)));
    return;
  }
  if (a[0] == b[0]) {
    SameLength(a.substr(1), b.substr(1), out, prefix + EbnfLiteral(a.substr(0, 1)) + " ");
    return;
  }
  const std::string nines(n - 1, '9'), zeros(n - 1, '0');
  if (a.substr(1) == zeros && b.substr(1) == nines) {
    out->push_back(prefix + fmt::format("[{}-{}] [0-9]{{{}}}", a[0], b[0], n - 1));
    return;
  }
  SameLength(a.substr(1), nines, out, prefix + EbnfLiteral(a.substr(0, 1)) + " ");
  if (b[0] - a[0] > 1) {
    out->push_back(prefix + fmt::format("[{}-{}] [0-9]{{{}}}", static_cast<char>(a[0] + 1),
                                        static_cast<char>(b[0] - 1), n - 1));
  }
  SameLength(zeros, b.substr(1), out, prefix + EbnfLiteral(b.substr(0, 1)) + " ");
}

// Non-negative integers in [lo, hi]; hi nullopt: unbounded.
std::string NonNegativeRange(uint64_t lo, std::optional<uint64_t> hi) {
  std::vector<std::string> alts;
  const std::string los = std::to_string(lo);
  const uint64_t top = hi ? *hi : 0;
  const size_t max_len = hi ? std::to_string(top).size() : los.size();
  for (size_t len = los.size(); len <= max_len; ++len) {
    const std::string a = len == los.size() ? los : "1" + std::string(len - 1, '0');
    std::string b = std::string(len, '9');
    if (hi && len == max_len) b = std::to_string(top);
    if (len == 1 && a == "0" && b == "0") {
      alts.push_back("\"0\"");
      continue;
    }
    SameLength(a, b, &alts, "");
  }
  if (!hi) alts.push_back(fmt::format("[1-9] [0-9]{{{},18}}", los.size()));
  std::string out;
  for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + ("( " + a + " )");
  return "( " + out + " )";
}

class Generator {
 public:
  Generator(const Json& root, std::string prefix)
      : root_(root), prefix_(std::move(prefix)) {}

  // The schema's rules; the start rule is <prefix>root.
  StatusOr<std::string> Run() {
    auto expr = Visit(root_, "#", 0);
    if (!expr.ok()) return expr.status();
    std::string out = prefix_ + "root ::= " + *expr + "\n";
    for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
    return out;
  }

 private:
  static Status Unsupported(const std::string& what, const std::string& path) {
    return InvalidArgumentError(fmt::format(
        "unsupported JSON Schema keyword '{}' at {}; supported: type, "
        "properties, required, additionalProperties, items, prefixItems, "
        "minItems, maxItems, enum, const, anyOf, oneOf, allOf (one schema), "
        "$ref, $defs, minLength, maxLength, pattern, format, minimum, "
        "maximum, exclusiveMinimum, exclusiveMaximum",
        what, path));
  }
  static Status Bad(const std::string& what, const std::string& path) {
    return InvalidArgumentError(fmt::format("JSON Schema at {}: {}", path, what));
  }

  std::string NewRule(const std::string& hint, const std::string& body) {
    const std::string name = fmt::format("{}s{}-{}", prefix_, rules_.size(), hint);
    rules_[name] = body;
    return name;
  }

  StatusOr<std::string> Visit(const Json& s, const std::string& path, int depth) {
    if (depth > 64) return Bad("nested more than 64 levels", path);
    if (s.is_boolean()) {
      if (s.get<bool>()) return std::string("json-value");
      return Bad("'false' accepts no value", path);
    }
    if (!s.is_object()) return Bad("a schema must be an object or a boolean", path);
    if (s.contains("$ref")) return Ref(s, path, depth);
    if (s.contains("const")) return Literal(s["const"]);
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) {
        return Bad("'enum' must be a non-empty array", path + "/enum");
      }
      std::string out;
      for (const Json& v : s["enum"]) out += (out.empty() ? "" : " | ") + Literal(v);
      return "( " + out + " )";
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_array() || s[key].empty()) {
        return Bad(fmt::format("'{}' must be a non-empty array", key), path);
      }
      // oneOf means exactly one: its branches must not overlap (or overlap
      // only in {} between closed objects, which both then exclude with
      // minProperties 1); otherwise it is refused.
      std::vector<bool> non_empty(s[key].size(), false);
      if (std::string_view(key) == "oneOf") {
        TSR_RETURN_IF_ERROR(CheckExclusive(s[key], path, &non_empty));
      }
      std::string out;
      for (size_t i = 0; i < s[key].size(); ++i) {
        Json branch = Resolve(s[key][i]);
        if (non_empty[i]) branch["minProperties"] = 1;
        auto e = Visit(non_empty[i] ? branch : s[key][i],
                       fmt::format("{}/{}/{}", path, key, i), depth + 1);
        if (!e.ok()) return e.status();
        out += (out.empty() ? "" : " | ") + *e;
      }
      return "( " + out + " )";
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].size() != 1) {
        return Unsupported("allOf (of more than one schema)", path);
      }
      return Visit(s["allOf"][0], path + "/allOf/0", depth + 1);
    }
    if (s.contains("type") && s["type"].is_array()) {
      std::string out;
      for (const Json& t : s["type"]) {
        if (!t.is_string()) return Bad("'type' entries must be strings", path);
        auto e = Typed(s, t.get<std::string>(), path, depth);
        if (!e.ok()) return e.status();
        out += (out.empty() ? "" : " | ") + *e;
      }
      if (out.empty()) return Bad("'type' is an empty list", path);
      return "( " + out + " )";
    }
    std::string type;
    if (s.contains("type")) {
      if (!s["type"].is_string()) return Bad("'type' must be a string or a list", path);
      type = s["type"].get<std::string>();
    } else if (s.contains("properties") || s.contains("additionalProperties") ||
               s.contains("required")) {
      type = "object";
    } else if (s.contains("items") || s.contains("prefixItems")) {
      type = "array";
    } else if (s.contains("pattern") || s.contains("format") ||
               s.contains("minLength") || s.contains("maxLength")) {
      type = "string";
    }
    if (type.empty()) {
      TSR_RETURN_IF_ERROR(CheckKeys(s, {}, path));
      return std::string("json-value");
    }
    return Typed(s, type, path, depth);
  }

  // `s`, or the schema its local $ref names (one level), for analysis.
  Json Resolve(const Json& s) const {
    if (!s.is_object() || !s.contains("$ref") || !s["$ref"].is_string()) return s;
    const std::string ref = s["$ref"].get<std::string>();
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (ref.compare(0, p.size(), p) != 0) continue;
      const std::string container = p.substr(2, p.size() - 3);
      const std::string name = ref.substr(p.size());
      if (root_.contains(container) && root_[container].contains(name)) {
        return root_[container][name];
      }
    }
    return s;
  }

  // The JSON types a schema admits ("integer" counts as a number too);
  // all seven when it does not say.
  static std::set<std::string> TypesOf(const Json& s) {
    static const std::set<std::string> kAll = {"null", "boolean", "object", "array",
                                               "number", "string", "integer"};
    if (!s.is_object()) return kAll;
    std::set<std::string> out;
    auto add_value = [&](const Json& v) {
      if (v.is_null()) out.insert("null");
      else if (v.is_boolean()) out.insert("boolean");
      else if (v.is_object()) out.insert("object");
      else if (v.is_array()) out.insert("array");
      else if (v.is_string()) out.insert("string");
      else out.insert("number");
    };
    if (s.contains("const")) {
      add_value(s["const"]);
    } else if (s.contains("enum") && s["enum"].is_array()) {
      for (const Json& v : s["enum"]) add_value(v);
    } else if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) out.insert(t.get<std::string>());
      if (t.is_array()) {
        for (const Json& e : t) {
          if (e.is_string()) out.insert(e.get<std::string>());
        }
      }
    } else if (s.contains("properties") || s.contains("required") ||
               s.contains("additionalProperties")) {
      out.insert("object");
    } else if (s.contains("items") || s.contains("prefixItems")) {
      out.insert("array");
    } else {
      return kAll;
    }
    if (out.count("integer")) out.insert("number");
    return out;
  }

  // Whether some key `a` requires is forbidden by `b` (a closed object).
  static bool RequiresForbidden(const Json& a, const Json& b) {
    if (!a.contains("required") || !a["required"].is_array()) return false;
    const bool closed = b.contains("additionalProperties") &&
                        b["additionalProperties"] == false;
    if (!closed) return false;
    for (const Json& k : a["required"]) {
      if (!k.is_string()) continue;
      if (!b.contains("properties") || !b["properties"].contains(k.get<std::string>())) {
        return true;
      }
    }
    return false;
  }

  Status CheckExclusive(const Json& branches, const std::string& path,
                        std::vector<bool>* non_empty) {
    std::vector<Json> resolved;
    for (const Json& b : branches) resolved.push_back(Resolve(b));
    for (size_t j = 1; j < resolved.size(); ++j) {
      for (size_t i = 0; i < j; ++i) {
        const Json& a = resolved[i];
        const Json& b = resolved[j];
        std::set<std::string> ta = TypesOf(a), tb = TypesOf(b), both;
        for (const std::string& t : ta) {
          if (tb.count(t)) both.insert(t);
        }
        if (both.empty()) continue;
        if (both.size() == 1 && *both.begin() != "null" && a.contains("enum") &&
            b.contains("enum") && a["enum"].is_array() && b["enum"].is_array()) {
          bool shared = false;
          for (const Json& v : a["enum"]) {
            for (const Json& w : b["enum"]) shared = shared || v == w;
          }
          if (!shared) continue;
        }
        if (both == std::set<std::string>{"object"}) {
          if (RequiresForbidden(a, b) || RequiresForbidden(b, a)) continue;
          // Closed objects with disjoint property names overlap only in {}.
          const bool closed_a = a.contains("additionalProperties") &&
                                a["additionalProperties"] == false;
          const bool closed_b = b.contains("additionalProperties") &&
                                b["additionalProperties"] == false;
          bool disjoint_names = closed_a && closed_b;
          if (disjoint_names && a.contains("properties") && b.contains("properties")) {
            for (auto it = a["properties"].begin(); it != a["properties"].end(); ++it) {
              disjoint_names = disjoint_names && !b["properties"].contains(it.key());
            }
          }
          if (disjoint_names) {
            // {} would satisfy both, so neither may produce it.
            (*non_empty)[i] = true;
            (*non_empty)[j] = true;
            continue;
          }
        }
        return Unsupported(
            fmt::format("oneOf (branches {} and {} may both match, so "
                        "\"exactly one\" cannot be enforced; use anyOf if "
                        "either will do)",
                        i, j),
            path);
      }
    }
    return OkStatus();
  }

  Status CheckKeys(const Json& s, std::initializer_list<const char*> allowed,
                   const std::string& path) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (k == "type" || Annotations().count(k)) continue;
      bool ok = false;
      for (const char* a : allowed) ok = ok || k == a;
      if (!ok) return Unsupported(k, path);
    }
    return OkStatus();
  }

  std::string Literal(const Json& v) { return EbnfLiteral(v.dump()); }

  StatusOr<std::string> Ref(const Json& s, const std::string& path, int depth) {
    if (!s["$ref"].is_string()) return Bad("'$ref' must be a string", path);
    const std::string ref = s["$ref"].get<std::string>();
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return it->second;
    const Json* target = nullptr;
    std::string name;
    if (ref == "#") {
      target = &root_;
      name = "root-ref";
    }
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p = prefix;
      if (ref.compare(0, p.size(), p) != 0) continue;
      const std::string key = ref.substr(p.size());
      const std::string container = p.substr(2, p.size() - 3);
      if (root_.contains(container) && root_[container].contains(key)) {
        target = &root_[container][key];
        name = key;
      }
    }
    if (target == nullptr) {
      return Bad(fmt::format("'$ref' {} does not name a schema under #/$defs "
                             "or #/definitions of this document",
                             ref),
                 path);
    }
    std::string hint;
    for (char c : name) {
      hint += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
      if (hint.size() > 32) break;
    }
    const std::string rule =
        fmt::format("{}s{}-ref-{}", prefix_, rules_.size(), hint);
    rules_[rule] = "\"\"";  // placeholder while the body is built (recursion)
    ref_rules_[ref] = rule;
    auto body = Visit(*target, ref, depth + 1);
    if (!body.ok()) return body.status();
    rules_[rule] = *body;
    return rule;
  }

  StatusOr<std::string> Typed(const Json& s, const std::string& type,
                              const std::string& path, int depth) {
    if (type == "null") {
      TSR_RETURN_IF_ERROR(CheckKeys(s, {}, path));
      return std::string("\"null\"");
    }
    if (type == "boolean") {
      TSR_RETURN_IF_ERROR(CheckKeys(s, {}, path));
      return std::string("( \"true\" | \"false\" )");
    }
    if (type == "integer") return Integer(s, path);
    if (type == "number") return Number(s, path);
    if (type == "string") return String(s, path);
    if (type == "array") return Array(s, path, depth);
    if (type == "object") return Object(s, path, depth);
    return Bad(fmt::format("unknown type '{}'", type), path);
  }

  static std::optional<int64_t> IntOf(const Json& v) {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
    }
    return std::nullopt;
  }

  StatusOr<std::string> Integer(const Json& s, const std::string& path) {
    TSR_RETURN_IF_ERROR(CheckKeys(
        s, {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}, path));
    std::optional<int64_t> lo, hi;
    constexpr int64_t kLimit = 999999999999999999;  // 18 digits
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_number()) {
        return Bad(fmt::format("'{}' must be a number", key), path);
      }
      const double d = s[key].get<double>();
      if (std::abs(d) > static_cast<double>(kLimit)) {
        return Bad(fmt::format("'{}' is beyond 18 digits", key), path);
      }
      const std::string k = key;
      int64_t v = static_cast<int64_t>(d);
      if (k == "minimum" || k == "exclusiveMinimum") {
        if (static_cast<double>(v) < d) ++v;              // ceil
        if (k == "exclusiveMinimum" && static_cast<double>(v) == d) ++v;
        lo = lo ? std::max(*lo, v) : v;
      } else {
        if (static_cast<double>(v) > d) --v;              // floor
        if (k == "exclusiveMaximum" && static_cast<double>(v) == d) --v;
        hi = hi ? std::min(*hi, v) : v;
      }
    }
    if (!lo && !hi) return std::string("json-integer");
    if (lo && hi && *lo > *hi) return Bad("no integer lies within the bounds", path);
    std::vector<std::string> parts;
    // Negative part: -[a, b] with a = max(1, -hi), b = -lo (or unbounded).
    if (!lo || *lo < 0) {
      const uint64_t a = hi && *hi < 0 ? static_cast<uint64_t>(-*hi) : 1;
      std::optional<uint64_t> b;
      if (lo) b = static_cast<uint64_t>(-*lo);
      parts.push_back("\"-\" " + NonNegativeRange(a, b));
    }
    if (!hi || *hi >= 0) {
      const uint64_t a = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
      std::optional<uint64_t> b;
      if (hi) b = static_cast<uint64_t>(*hi);
      parts.push_back(NonNegativeRange(a, b));
    }
    std::string out;
    for (const std::string& p : parts) out += (out.empty() ? "" : " | ") + ("( " + p + " )");
    return NewRule("int", out);
  }

  StatusOr<std::string> Number(const Json& s, const std::string& path) {
    TSR_RETURN_IF_ERROR(CheckKeys(s, {"minimum", "exclusiveMinimum"}, path));
    if (s.contains("exclusiveMinimum")) {
      return Unsupported("exclusiveMinimum (on a number)", path);
    }
    if (s.contains("minimum")) {
      if (!s["minimum"].is_number() || s["minimum"].get<double>() != 0.0) {
        return Unsupported("minimum (on a number, other than 0)", path);
      }
      return std::string("json-nonneg-number");
    }
    return std::string("json-number");
  }

  StatusOr<std::string> String(const Json& s, const std::string& path) {
    TSR_RETURN_IF_ERROR(CheckKeys(s, {"minLength", "maxLength", "pattern", "format"}, path));
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return Bad("'pattern' must be a string", path);
      auto re = RegexToEbnf(s["pattern"].get<std::string>(), true);
      if (!re.ok()) return re.status().WithContext(path + "/pattern");
      return NewRule("pattern", "\"\\\"\" " + *re + " \"\\\"\"");
    }
    if (s.contains("format")) {
      if (!s["format"].is_string()) return Bad("'format' must be a string", path);
      const std::string f = s["format"].get<std::string>();
      static const std::map<std::string, std::string> kFormats = {
          {"date", R"([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01]))"},
          {"time", R"(([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))"},
          {"date-time", R"([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9]))"},
          {"email", R"([a-zA-Z0-9._%+-]{1,64}@[a-zA-Z0-9-]{1,63}(\.[a-zA-Z0-9-]{1,63}){0,4}\.[a-zA-Z]{2,24})"},
          {"uuid", R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"},
          {"ipv4", R"(((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9]))"},
          {"uri", R"([a-zA-Z][a-zA-Z0-9+.-]{0,31}:[^ <>{}|^`]{1,2048})"},
      };
      auto it = kFormats.find(f);
      if (it == kFormats.end()) {
        return Unsupported(fmt::format("format '{}'", f), path);
      }
      auto re = RegexToEbnf(it->second, true);
      if (!re.ok()) return re.status();
      return NewRule("format", "\"\\\"\" " + *re + " \"\\\"\"");
    }
    if (s.contains("minLength") || s.contains("maxLength")) {
      std::optional<int64_t> lo, hi;
      if (s.contains("minLength")) lo = IntOf(s["minLength"]);
      if (s.contains("maxLength")) hi = IntOf(s["maxLength"]);
      if ((s.contains("minLength") && (!lo || *lo < 0)) ||
          (s.contains("maxLength") && (!hi || *hi < 0))) {
        return Bad("minLength/maxLength must be non-negative integers", path);
      }
      if ((lo && *lo > 10000) || (hi && *hi > 10000)) {
        return Bad("minLength/maxLength above 10000 are not supported", path);
      }
      const int64_t min = lo ? *lo : 0;
      if (hi && *hi < min) return Bad("maxLength is below minLength", path);
      const std::string rep = hi ? fmt::format("{{{},{}}}", min, *hi)
                                 : fmt::format("{{{},}}", min);
      return NewRule("str", "\"\\\"\" json-char" + rep + " \"\\\"\"");
    }
    return std::string("json-string");
  }

  StatusOr<std::string> Array(const Json& s, const std::string& path, int depth) {
    TSR_RETURN_IF_ERROR(CheckKeys(s, {"items", "prefixItems", "additionalItems",
                                      "minItems", "maxItems", "uniqueItems"},
                                  path));
    if (s.contains("uniqueItems") &&
        !(s["uniqueItems"].is_boolean() && !s["uniqueItems"].get<bool>())) {
      return Unsupported("uniqueItems", path);
    }
    // Tuples: 2020-12 prefixItems (+ items for the rest), or draft-04's
    // items: [...] (+ additionalItems for the rest).
    const bool draft4_tuple = s.contains("items") && s["items"].is_array();
    const char* prefix_key = draft4_tuple ? "items" : "prefixItems";
    const char* rest_key = draft4_tuple ? "additionalItems" : "items";
    if (!draft4_tuple && s.contains("additionalItems")) {
      return Unsupported("additionalItems (without an items list)", path);
    }
    std::vector<std::string> prefix;
    if (s.contains(prefix_key)) {
      if (!s[prefix_key].is_array()) {
        return Bad(fmt::format("'{}' must be an array", prefix_key), path);
      }
      for (size_t i = 0; i < s[prefix_key].size(); ++i) {
        auto e = Visit(s[prefix_key][i],
                       fmt::format("{}/{}/{}", path, prefix_key, i), depth + 1);
        if (!e.ok()) return e.status();
        prefix.push_back(*e);
      }
    }
    std::optional<std::string> rest = std::string("json-value");
    if (s.contains(rest_key)) {
      if (s[rest_key].is_boolean() && !s[rest_key].get<bool>()) {
        rest.reset();
      } else {
        auto e = Visit(s[rest_key], path + "/" + rest_key, depth + 1);
        if (!e.ok()) return e.status();
        rest = *e;
      }
    }
    std::optional<int64_t> min, max;
    if (s.contains("minItems")) min = IntOf(s["minItems"]);
    if (s.contains("maxItems")) max = IntOf(s["maxItems"]);
    if ((s.contains("minItems") && (!min || *min < 0)) ||
        (s.contains("maxItems") && (!max || *max < 0))) {
      return Bad("minItems/maxItems must be non-negative integers", path);
    }
    if ((min && *min > 1000) || (max && *max > 1000)) {
      return Bad("minItems/maxItems above 1000 are not supported", path);
    }
    const int64_t lo = min ? *min : 0;
    if (max && *max < lo) return Bad("maxItems is below minItems", path);
    const int64_t n = static_cast<int64_t>(prefix.size());
    if (n > 0) return Tuple(prefix, rest, lo, max, path);
    if (!rest || (max && *max == 0)) {
      if (lo > 0) return Bad("no array satisfies minItems here", path);
      return std::string("( \"[\" ws \"]\" )");
    }
    const std::string item = *rest;
    const std::string more = " ws \",\" ws " + item;
    std::string body;
    if (lo == 0) {
      const std::string rep = max ? fmt::format("{{0,{}}}", *max - 1) : "*";
      body = "\"[\" ws ( " + item + " (" + more + " )" + rep + " ws )? \"]\"";
    } else {
      const std::string rep = max ? fmt::format("{{{},{}}}", lo - 1, *max - 1)
                                  : fmt::format("{{{},}}", lo - 1);
      body = "\"[\" ws " + item + " (" + more + " )" + rep + " ws \"]\"";
    }
    return NewRule("array", body);
  }

  // An array whose first items follow `prefix` (each optional unless
  // minItems needs it) and whose further items follow `rest` (none when
  // unset), with lo <= length <= max.
  StatusOr<std::string> Tuple(const std::vector<std::string>& prefix,
                              const std::optional<std::string>& rest,
                              int64_t lo, std::optional<int64_t> max,
                              const std::string& path) {
    const int64_t n = static_cast<int64_t>(prefix.size());
    const int64_t top = max ? std::min(*max, rest ? *max : n) : (rest ? -1 : n);
    if (top >= 0 && top < lo) return Bad("no array satisfies minItems here", path);
    const std::string base = fmt::format("{}s{}-tuple", prefix_, rules_.size());
    auto name = [&](int64_t i) { return fmt::format("{}-{}", base, i); };
    // R_i: i items written; R_n handles the rest.
    const int64_t last = top >= 0 ? std::min(top, n) : n;
    for (int64_t i = last; i >= 0; --i) {
      std::string body;
      if (i == n && rest && (top < 0 || top > n)) {
        const int64_t need = std::max<int64_t>(0, lo - n);
        const std::string rep = top < 0 ? fmt::format("{{{},}}", need)
                                        : fmt::format("{{{},{}}}", need, top - n);
        body = "( ws \",\" ws " + *rest + " )" + rep;
      } else if (i == last) {
        body = "\"\"";
      } else {
        const std::string sep = i == 0 ? "" : "ws \",\" ws ";
        body = sep + prefix[static_cast<size_t>(i)] + " " + name(i + 1);
        if (i >= lo) body += " | \"\"";
      }
      rules_[name(i)] = body;
    }
    return NewRule("tuple", "\"[\" ws " + name(0) + " ws \"]\"");
  }

  StatusOr<std::string> Object(const Json& s, const std::string& path, int depth) {
    TSR_RETURN_IF_ERROR(CheckKeys(
        s, {"properties", "required", "additionalProperties", "minProperties"},
        path));
    bool at_least_one = false;
    if (s.contains("minProperties")) {
      const auto m = IntOf(s["minProperties"]);
      if (!m || *m < 0 || *m > 1) {
        return Unsupported("minProperties (other than 0 or 1)", path);
      }
      at_least_one = *m == 1;
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return Bad("'required' must be an array", path);
      for (const Json& r : s["required"]) {
        if (!r.is_string()) return Bad("'required' entries must be strings", path);
        required.insert(r.get<std::string>());
      }
    }
    // (key literal, value expression, required)
    std::vector<std::tuple<std::string, std::string, bool>> props;
    if (s.contains("properties")) {
      if (!s["properties"].is_object()) return Bad("'properties' must be an object", path);
      for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
        auto e = Visit(*it, path + "/properties/" + it.key(), depth + 1);
        if (!e.ok()) return e.status();
        props.emplace_back(Literal(Json(it.key())), *e, required.count(it.key()) > 0);
        required.erase(it.key());
      }
    }
    for (const std::string& r : required) {  // required but not described
      props.emplace_back(Literal(Json(r)), "json-value", true);
    }
    std::optional<std::string> extra;  // value expression of extra keys
    if (s.contains("additionalProperties")) {
      const Json& a = s["additionalProperties"];
      if (!(a.is_boolean() && !a.get<bool>())) {
        auto e = Visit(a, path + "/additionalProperties", depth + 1);
        if (!e.ok()) return e.status();
        extra = *e;
      }
    } else if (props.empty()) {
      extra = "json-value";
    }
    const std::string extra_kv =
        extra ? "json-string ws \":\" ws " + *extra : std::string();
    if (props.empty()) {
      if (!extra) {
        if (at_least_one) return Bad("minProperties 1 with no property allowed", path);
        return std::string("( \"{\" ws \"}\" )");
      }
      return NewRule("map", "\"{\" ws ( " + extra_kv + " ( ws \",\" ws " + extra_kv +
                                " )* ws )" + (at_least_one ? "" : "?") + " \"}\"");
    }
    // F_i: nothing written yet, at property i; A_i: something written.
    const size_t n = props.size();
    std::vector<std::string> f(n + 1), a(n + 1);
    const std::string base = fmt::format("{}s{}-obj", prefix_, rules_.size());
    for (size_t i = 0; i <= n; ++i) {
      f[i] = fmt::format("{}-f{}", base, i);
      a[i] = fmt::format("{}-a{}", base, i);
    }
    const std::string extras = extra ? "( ws \",\" ws " + extra_kv + " )*" : "\"\"";
    rules_[a[n]] = extras;
    // F_n: nothing written at all — allowed unless minProperties is 1.
    if (at_least_one) {
      rules_[f[n]] = extra ? extra_kv + " " + extras : "";
    } else {
      rules_[f[n]] = extra ? "( " + extra_kv + " " + extras + " )?" : "\"\"";
    }
    for (size_t i = n; i-- > 0;) {
      const auto& [key, value, req] = props[i];
      const std::string kv = key + " ws \":\" ws " + value;
      // Skipping property i leads to F_{i+1}, unless that would let the
      // object end empty under minProperties 1 with nothing after.
      const bool skip = !req && !rules_[f[i + 1]].empty();
      rules_[f[i]] = kv + " " + a[i + 1] + (skip ? " | " + f[i + 1] : "");
      rules_[a[i]] = "ws \",\" ws " + kv + " " + a[i + 1] + (req ? "" : " | " + a[i + 1]);
    }
    if (rules_[f[n]].empty()) rules_.erase(f[n]);
    return NewRule("object", "\"{\" ws " + f[0] + " ws \"}\"");
  }

  const Json& root_;
  const std::string prefix_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> ref_rules_;
};

}  // namespace

StatusOr<std::string> JsonSchemaToEbnf(const nlohmann::ordered_json& schema) {
  TSR_ASSIGN_OR_RETURN(std::string rules, Generator(schema, "").Run());
  return rules + kBaseRules;
}

StatusOr<std::string> JsonSchemaRulesEbnf(const nlohmann::ordered_json& schema,
                                          const std::string& prefix) {
  return Generator(schema, prefix).Run();
}

std::string JsonBaseEbnf() { return kBaseRules; }

std::string AnyJsonObjectEbnf() {
  return std::string("root ::= json-object\n") + kBaseRules;
}

}  // namespace tessera::grammar
