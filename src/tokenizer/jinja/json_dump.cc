#include "tokenizer/jinja/json_dump.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tokenizer/jinja/operations.h"
#include "tokenizer/jinja/text.h"

namespace tessera::jinja {
namespace {

void AppendEscape(char32_t c, std::string* out) {
  *out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
}

class Dumper {
 public:
  Dumper(const JsonDumpOptions& options, int line)
      : options_(options), line_(line) {}

  Status Dump(const Value& v, int depth, std::string* out) {
    switch (v.kind()) {
      case Value::Kind::kNone:
        *out += "null";
        return OkStatus();
      case Value::Kind::kBool:
        *out += v.bool_value() ? "true" : "false";
        return OkStatus();
      case Value::Kind::kInt:
        *out += std::to_string(v.int_value());
        return OkStatus();
      case Value::Kind::kFloat: {
        const double d = v.number_value();
        if (std::isnan(d)) {
          *out += "NaN";
        } else if (std::isinf(d)) {
          *out += d < 0 ? "-Infinity" : "Infinity";
        } else {
          *out += text::FormatFloat(d);
        }
        return OkStatus();
      }
      case Value::Kind::kString:
        *out += JsonQuote(v.str(), options_.ensure_ascii);
        return OkStatus();
      case Value::Kind::kList:
        return DumpList(v.list(), depth, out);
      case Value::Kind::kDict:
        return DumpDict(v.dict(), depth, out);
      default:
        return TemplateError(
            line_, fmt::format("tojson: Object of type {} is not JSON "
                               "serializable",
                               v.TypeName()));
    }
  }

 private:
  void NewLine(int depth, std::string* out) {
    if (!options_.indent) return;
    out->push_back('\n');
    for (int i = 0; i < depth; ++i) *out += *options_.indent;
  }

  Status DumpList(const ValueList& items, int depth, std::string* out) {
    if (items.empty()) {
      *out += "[]";
      return OkStatus();
    }
    out->push_back('[');
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) *out += options_.item_separator;
      NewLine(depth + 1, out);
      TSR_RETURN_IF_ERROR(Dump(items[i], depth + 1, out));
    }
    NewLine(depth, out);
    out->push_back(']');
    return OkStatus();
  }

  Status DumpDict(const ValueDict& dict, int depth, std::string* out) {
    if (dict.empty()) {
      *out += "{}";
      return OkStatus();
    }
    std::vector<const ValueDict::Entry*> entries;
    for (const auto& entry : dict) entries.push_back(&entry);
    if (options_.sort_keys) {
      std::stable_sort(
          entries.begin(), entries.end(),
          [](const auto* a, const auto* b) { return a->first < b->first; });
    }
    out->push_back('{');
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) *out += options_.item_separator;
      NewLine(depth + 1, out);
      *out += JsonQuote(entries[i]->first, options_.ensure_ascii);
      *out += options_.key_separator;
      TSR_RETURN_IF_ERROR(Dump(entries[i]->second, depth + 1, out));
    }
    NewLine(depth, out);
    out->push_back('}');
    return OkStatus();
  }

  const JsonDumpOptions& options_;
  int line_;
};

}  // namespace

std::string JsonQuote(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (char32_t c : text::Decode(s)) {
    switch (c) {
      case U'"':
        out += "\\\"";
        continue;
      case U'\\':
        out += "\\\\";
        continue;
      case U'\n':
        out += "\\n";
        continue;
      case U'\r':
        out += "\\r";
        continue;
      case U'\t':
        out += "\\t";
        continue;
      case U'\b':
        out += "\\b";
        continue;
      case U'\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {  // a surrogate pair, as Python writes it
        const char32_t v = c - 0x10000;
        AppendEscape(0xD800 | (v >> 10), &out);
        AppendEscape(0xDC00 | (v & 0x3FF), &out);
      } else {
        AppendEscape(c, &out);
      }
    } else {
      text::AppendUtf8(c, &out);
    }
  }
  out.push_back('"');
  return out;
}

StatusOr<std::string> JsonDumps(const Value& value,
                                const JsonDumpOptions& options, int line) {
  std::string out;
  Dumper dumper(options, line);
  TSR_RETURN_IF_ERROR(dumper.Dump(value, 0, &out));
  return out;
}

}  // namespace tessera::jinja
