#include "metrics/text_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

namespace tally::metrics {
namespace {

bool name_char(char c, bool first, bool colon_ok) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  const bool digit = c >= '0' && c <= '9';
  return alpha || (colon_ok && c == ':') || (!first && digit);
}

bool valid_name(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

// Python's repr(float): the shortest round-trip digits, fixed notation for decimal exponents
// in [-4, 16), scientific otherwise; fixed always shows a fraction (".0").
std::string python_float_repr(double value) {
  char buf[64];
  auto sci = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(sci.ptr - buf));
  const size_t e = s.find('e');
  const int exponent = std::stoi(std::string(s.substr(e + 1)));
  if (exponent < -4 || exponent >= 16) return std::string(s);  // "1e-05", "1.5e+16" as Python
  auto fixed = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
  std::string out(buf, static_cast<size_t>(fixed.ptr - buf));
  if (out.find('.') == std::string::npos) out += ".0";
  return out;
}

}  // namespace

bool valid_metric_name(std::string_view name) { return valid_name(name, /*colon_ok=*/true); }

bool valid_label_name(std::string_view name) {
  return valid_name(name, /*colon_ok=*/false) && !name.starts_with("__");
}

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  std::string s = python_float_repr(value);
  // Go switches to exponents sooner than Python: past six digits before the point.
  const size_t dot = s.find('.');
  if (value > 0 && dot != std::string::npos && dot > 6) {
    std::string mantissa = s.substr(0, 1) + "." + s.substr(1, dot - 1) + s.substr(dot + 1);
    while (!mantissa.empty() && (mantissa.back() == '0' || mantissa.back() == '.')) {
      mantissa.pop_back();
    }
    return mantissa + "e+0" + std::to_string(dot - 1);
  }
  return s;
}

void append_value(std::string& out, double value) { out += format_value(value); }

void append_escaped_label_value(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

void append_escaped_help(std::string& out, std::string_view help) {
  for (char c : help) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
}

}  // namespace tally::metrics
