#include "template/jinja/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "template/jinja/value_ops.h"
#include "tokenizer/utf8.h"

namespace tally::jinja {
namespace {

void append_u_escape(std::string& out, uint32_t unit) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);
  out += buf;
}

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const auto step = tok::utf8_step(s, i);
      const size_t len = step.length == 0 ? 1 : step.length;
      if (!ensure_ascii) {
        out.append(s, i, len);
      } else {
        uint32_t cp = step.kind == tok::Utf8Step::kValid ? step.codepoint : 0xFFFD;
        if (cp >= 0x10000) {
          cp -= 0x10000;
          append_u_escape(out, 0xD800 + (cp >> 10));
          append_u_escape(out, 0xDC00 + (cp & 0x3FF));
        } else {
          append_u_escape(out, cp);
        }
      }
      i += len;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          append_u_escape(out, c);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

void dump_float(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "NaN";
  } else if (std::isinf(d)) {
    out += d < 0 ? "-Infinity" : "Infinity";
  } else {
    out += py_float_repr(d);
  }
}

void newline_indent(std::string& out, const JsonDumpOptions& o, int level) {
  out.push_back('\n');
  for (int i = 0; i < level; ++i) out += *o.indent;
}

void dump(std::string& out, const Value& v, const JsonDumpOptions& o, int level);

void dump_array(std::string& out, const Array& a, const JsonDumpOptions& o, int level) {
  if (a.items.empty()) {
    out += "[]";
    return;
  }
  out.push_back('[');
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (i) out += o.item_separator;
    if (o.indent) newline_indent(out, o, level + 1);
    dump(out, a.items[i], o, level + 1);
  }
  if (o.indent) newline_indent(out, o, level);
  out.push_back(']');
}

void dump_object(std::string& out, const Object& obj, const JsonDumpOptions& o, int level) {
  if (obj.is_namespace) render_fail("Object of type Namespace is not JSON serializable");
  if (obj.size() == 0) {
    out += "{}";
    return;
  }
  std::vector<const std::pair<std::string, Value>*> entries;
  for (const auto& e : obj.entries()) entries.push_back(&e);
  if (o.sort_keys) {
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  out.push_back('{');
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) out += o.item_separator;
    if (o.indent) newline_indent(out, o, level + 1);
    dump_string(out, entries[i]->first, o.ensure_ascii);
    out += o.key_separator;
    dump(out, entries[i]->second, o, level + 1);
  }
  if (o.indent) newline_indent(out, o, level);
  out.push_back('}');
}

void dump(std::string& out, const Value& v, const JsonDumpOptions& o, int level) {
  switch (v.type()) {
    case Value::Type::kNone:
      out += "null";
      return;
    case Value::Type::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Type::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Type::kFloat:
      dump_float(out, v.as_float());
      return;
    case Value::Type::kString:
      dump_string(out, v.as_string(), o.ensure_ascii);
      if (out.size() > o.max_bytes) {
        throw JinjaError(JinjaError::Kind::kLimit,
                         "JSON text longer than " + std::to_string(o.max_bytes) + " bytes");
      }
      return;
    case Value::Type::kArray:
      dump_array(out, v.as_array(), o, level);
      return;
    case Value::Type::kObject:
      dump_object(out, v.as_object(), o, level);
      return;
    case Value::Type::kUndefined:
    case Value::Type::kFunction:
      render_failf("Object of type {} is not JSON serializable", v.type_name());
  }
}

}  // namespace

void json_dump(std::string& out, const Value& v, const JsonDumpOptions& options) {
  dump(out, v, options, 0);
}

}  // namespace tally::jinja
