// Pieces of the Prometheus text exposition format 0.0.4: name checks, escaping, and numbers
// written the way Python's prometheus_client writes them (vLLM's exporter), so `le` label
// values match vLLM's byte for byte ("0.001", "1.0", "2560.0", "+Inf") and PromQL selectors
// written against vLLM keep matching.
#pragma once

#include <string>
#include <string_view>

namespace tally::metrics {

// What a /metrics response declares as its Content-Type.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// [a-zA-Z_:][a-zA-Z0-9_:]* (colons are allowed in metric names, not in label names).
bool valid_metric_name(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved by Prometheus).
bool valid_label_name(std::string_view name);

// Appends a sample value or `le` bound: NaN, +Inf, -Inf, else Python's repr() of the double
// ("3.0", "0.25", "1e-05") switched to Go's exponent form past six integer digits
// ("1.234567e+06"), as prometheus_client's floatToGoString does.
void append_value(std::string& out, double value);
std::string format_value(double value);

// Label values escape backslash, double quote and newline; HELP text escapes backslash and
// newline.
void append_escaped_label_value(std::string& out, std::string_view value);
void append_escaped_help(std::string& out, std::string_view help);

}  // namespace tally::metrics
