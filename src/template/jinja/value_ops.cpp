#include "template/jinja/value_ops.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "template/jinja/error.h"
#include "tokenizer/utf8.h"

namespace tally::jinja {
namespace {

void repr_string(std::string& out, const std::string& s) {
  // Python prefers single quotes unless the text holds one and no double quote.
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out.push_back(quote);
  for (size_t i = 0; i < s.size();) {
    const auto step = tok::utf8_step(s, i);
    const auto c = static_cast<unsigned char>(s[i]);
    if (step.kind == tok::Utf8Step::kValid && step.length > 1) {
      if (step.codepoint < 0xA0) {  // C1 controls are not printable
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(step.codepoint));
        out += buf;
      } else {
        out.append(s, i, step.length);
      }
      i += step.length;
      continue;
    }
    if (c == '\\' || c == static_cast<unsigned char>(quote)) {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
    ++i;
  }
  out.push_back(quote);
}

void check_limit(const std::string& out, size_t limit) {
  if (out.size() > limit) {
    throw JinjaError(JinjaError::Kind::kLimit,
                     "string longer than " + std::to_string(limit) + " bytes");
  }
}

void repr_container(std::string& out, const Value& v, size_t limit) {
  if (v.is_array()) {
    const Array& a = v.as_array();
    out.push_back(a.is_tuple ? '(' : '[');
    for (size_t i = 0; i < a.items.size(); ++i) {
      if (i) out += ", ";
      py_repr_append(out, a.items[i], limit);
    }
    if (a.is_tuple && a.items.size() == 1) out.push_back(',');
    out.push_back(a.is_tuple ? ')' : ']');
    return;
  }
  const Object& o = v.as_object();
  if (o.is_namespace) out += "<Namespace ";
  out.push_back('{');
  bool first = true;
  for (const auto& [k, item] : o.entries()) {
    if (!first) out += ", ";
    first = false;
    repr_string(out, k);
    out += ": ";
    py_repr_append(out, item, limit);
  }
  out.push_back('}');
  if (o.is_namespace) out.push_back('>');
}

int compare_numbers(const Value& a, const Value& b) {
  if (!a.is_float() && !b.is_float()) {
    const int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  const double x = a.as_float(), y = b.as_float();
  return x < y ? -1 : (x > y ? 1 : 0);
}

bool objects_equal(const Object& a, const Object& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a.entries()) {
    const Value* other = b.find(k);
    if (other == nullptr || !py_equal(v, *other)) return false;
  }
  return true;
}

}  // namespace

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form, then laid out as Python's repr does:
  // positional for exponents in [-4, 16), scientific otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exp = std::stoi(sci.substr(e_pos + 1));
  const bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  // Built by appending only (GCC 12 reports false -Wrestrict overlaps on operator+ chains).
  std::string out;
  if (negative) out.push_back('-');
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out.append("0.");
      out.append(static_cast<size_t>(-exp - 1), '0');
      out.append(digits);
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out.append(digits);
      out.append(static_cast<size_t>(exp) + 1 - digits.size(), '0');
      out.append(".0");
    } else {
      out.append(digits, 0, static_cast<size_t>(exp) + 1);
      out.push_back('.');
      out.append(digits, static_cast<size_t>(exp) + 1, std::string::npos);
    }
    return out;
  }
  out.push_back(digits[0]);
  if (digits.size() > 1) {
    out.push_back('.');
    out.append(digits, 1, std::string::npos);
  }
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  out.append(exp_buf);
  return out;
}

void py_repr_append(std::string& out, const Value& v, size_t limit) {
  if (v.is_string()) {
    repr_string(out, v.as_string());
    check_limit(out, limit);
  } else if (v.is_array() || v.is_object()) {
    repr_container(out, v, limit);
  } else {
    py_str_append(out, v, limit);
  }
}

void py_str_append(std::string& out, const Value& v, size_t limit) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return;
    case Value::Type::kNone:
      out += "None";
      return;
    case Value::Type::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Value::Type::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Type::kFloat:
      out += py_float_repr(v.as_float());
      return;
    case Value::Type::kString:
      out += v.as_string();
      check_limit(out, limit);
      return;
    case Value::Type::kArray:
    case Value::Type::kObject:
      repr_container(out, v, limit);
      return;
    case Value::Type::kFunction:
      out += "<function " + v.as_function().name + ">";
      return;
  }
}

std::string py_str(const Value& v, size_t limit) {
  std::string out;
  py_str_append(out, v, limit);
  return out;
}

bool py_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return true;
    case Value::Type::kString:
      return a.as_string() == b.as_string();
    case Value::Type::kArray: {
      const Array& x = a.as_array();
      const Array& y = b.as_array();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!py_equal(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Value::Type::kObject:
      if (a.as_object().is_namespace || b.as_object().is_namespace) {
        return &a.as_object() == &b.as_object();
      }
      return objects_equal(a.as_object(), b.as_object());
    case Value::Type::kFunction:
      return &a.as_function() == &b.as_function();
    default:
      return false;
  }
}

bool py_less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) < 0;
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_array() && b.is_array() && a.as_array().is_tuple == b.as_array().is_tuple) {
    const auto& x = a.as_array().items;
    const auto& y = b.as_array().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!py_equal(x[i], y[i])) return py_less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  render_failf("'<' not supported between instances of '{}' and '{}'", a.type_name(),
               b.type_name());
}

size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += tok::utf8_char_length(s, i)) ++n;
  return n;
}

std::vector<size_t> utf8_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); i += tok::utf8_char_length(s, i)) offsets.push_back(i);
  offsets.push_back(s.size());
  return offsets;
}

bool py_is_space(uint32_t c) {
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) return true;
  if (c < 0x80) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string_view py_strip(std::string_view s, std::string_view chars, bool left, bool right,
                          bool default_chars) {
  // A code point is stripped if it is white space (default) or one of `chars`.
  auto strippable = [&](size_t pos, size_t len, uint32_t cp) {
    if (default_chars) return py_is_space(cp);
    const std::string_view ch = s.substr(pos, len);
    for (size_t i = 0; i < chars.size(); i += tok::utf8_char_length(chars, i)) {
      if (chars.substr(i, tok::utf8_char_length(chars, i)) == ch) return true;
    }
    return false;
  };
  const std::vector<size_t> offs = utf8_offsets(s);
  const size_t n = offs.size() - 1;
  auto cp_at = [&](size_t k) {
    const auto step = tok::utf8_step(s, offs[k]);
    return step.kind == tok::Utf8Step::kValid ? step.codepoint : 0xFFFFFFFFu;
  };
  size_t begin = 0, end = n;
  if (left) {
    while (begin < end && strippable(offs[begin], offs[begin + 1] - offs[begin], cp_at(begin))) {
      ++begin;
    }
  }
  if (right) {
    while (end > begin && strippable(offs[end - 1], offs[end] - offs[end - 1], cp_at(end - 1))) {
      --end;
    }
  }
  return s.substr(offs[begin], offs[end] - offs[begin]);
}

}  // namespace tally::jinja
