#include "metrics/text_format.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>

namespace tessera::metrics {
namespace {

bool IsAlpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = IsAlpha(c) || c == '_' || c == ':' || (i > 0 && IsDigit(c));
    if (!ok) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!(IsAlpha(c) || c == '_' || (i > 0 && IsDigit(c)))) return false;
  }
  return true;
}

namespace {

// Backslash and newline escaped (HELP text); quotes too for label values.
std::string Escape(std::string_view text, bool quotes) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  return Escape(value, /*quotes=*/true);
}

std::string EscapeHelp(std::string_view help) {
  return Escape(help, /*quotes=*/false);
}

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Every double of magnitude below 2^63 that has no fraction is exactly an
  // int64; printing it as one avoids "1e+06" and keeps the exact value.
  if (std::trunc(value) == value && std::fabs(value) < 9.2e18) {
    return fmt::format("{}", static_cast<int64_t>(value));
  }
  return fmt::format("{}", value);  // shortest round-trip representation
}

}  // namespace tessera::metrics
