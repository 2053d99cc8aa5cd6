// Pieces of the Prometheus text exposition format 0.0.4: name checks,
// escaping and number formatting. Pure functions; thread-safe.
//
// Reference: https://prometheus.io/docs/instrumenting/exposition_formats/
#ifndef TESSERA_METRICS_TEXT_FORMAT_H_
#define TESSERA_METRICS_TEXT_FORMAT_H_

#include <string>
#include <string_view>

namespace tessera::metrics {

// The Content-Type a /metrics response carries.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved by Prometheus).
bool IsValidLabelName(std::string_view name);

// Label values escape backslash, double quote and newline.
std::string EscapeLabelValue(std::string_view value);
// HELP text escapes backslash and newline.
std::string EscapeHelp(std::string_view help);

// A sample value or `le` bound as Prometheus parses it: integral values
// without exponent or fraction ("3", "1000000"), others in the shortest form
// that round-trips ("0.25", "1e-05"), and "NaN", "+Inf", "-Inf".
std::string FormatValue(double value);

}  // namespace tessera::metrics

#endif  // TESSERA_METRICS_TEXT_FORMAT_H_
