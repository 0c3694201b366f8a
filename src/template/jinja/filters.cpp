// Jinja2's built-in filters that chat templates use, with Jinja2's argument names. tojson is
// transformers' version (no HTML escaping, keys unsorted, ensure_ascii=False). Filters that
// yield generators in Jinja2 (map, select, items...) yield lists here.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/json.h"
#include "template/jinja/value_ops.h"

namespace tally::jinja {
namespace {

Value str_result(Interpreter& in, std::string s) {
  in.check_size(s.size());
  in.charge(s.size());
  return Value(std::move(s));
}

Value list_result(Interpreter& in, std::vector<Value> items) {
  in.charge(items.size() * sizeof(Value));
  return Value::array(std::move(items));
}

// "a.b.0": nested attribute / index lookup as Jinja2's make_attrgetter.
Value attribute_path(Interpreter& in, const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const std::string part = path.substr(start, dot - start);
    if (!part.empty() &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      int64_t index = 0;
      const auto res = std::from_chars(part.data(), part.data() + part.size(), index);
      cur = res.ec == std::errc() ? get_item(cur, Value(index))
                                  : Value::undefined("index out of range");
    } else {
      cur = cur.is_undefined() ? cur : get_attr(in, cur, part);
    }
    start = dot + 1;
  }
  return cur;
}

Value f_trim(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("trim", args, {"chars"});
  const bool dflt = !a.has(0) || a.get(0).is_none();
  const std::string chars = dflt ? "" : a.get_string(0, "");
  const std::string s = str_of(in, v);
  return Value(py_strip(s, chars, true, true, dflt));
}

Value call_method(Interpreter& in, const std::string& s, std::string_view name, CallArgs& args) {
  return find_method(Value(s), name)(in, Value(s), args);
}
Value f_upper(Interpreter& in, const Value& v, CallArgs& a) {
  return call_method(in, str_of(in, v), "upper", a);
}
Value f_lower(Interpreter& in, const Value& v, CallArgs& a) {
  return call_method(in, str_of(in, v), "lower", a);
}
Value f_capitalize(Interpreter& in, const Value& v, CallArgs& a) {
  return call_method(in, str_of(in, v), "capitalize", a);
}

// Jinja2's title: words start after white space, '-', or an opening bracket.
Value f_title(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("title", args, {});
  std::string s = str_of(in, v);
  bool word_start = true;
  for (char& c : s) {
    const bool sep = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ||
                     c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      word_start = true;
      continue;
    }
    if (word_start) {
      c = c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c;
    } else {
      c = c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
    }
    word_start = false;
  }
  return Value(std::move(s));
}

Value f_replace(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("replace", args, {"old", "new", "count"});
  CallArgs forwarded;
  forwarded.positional = {Value(str_of(in, a.get(0))), Value(str_of(in, a.get(1)))};
  if (a.has(2) && !a.get(2).is_none()) forwarded.positional.push_back(a.get(2));
  return call_method(in, str_of(in, v), "replace", forwarded);
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("length", args, {});
  switch (v.type()) {
    case Value::Type::kUndefined:
      return Value(int64_t{0});
    case Value::Type::kString:
      return Value(static_cast<int64_t>(utf8_length(v.as_string())));
    case Value::Type::kArray:
      return Value(static_cast<int64_t>(v.as_array().items.size()));
    case Value::Type::kObject:
      return Value(static_cast<int64_t>(v.as_object().size()));
    default:
      render_failf("object of type '{}' has no len()", v.type_name());
  }
}

Value f_first(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("first", args, {});
  std::vector<Value> items = iterate(in, v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value f_last(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("last", args, {});
  std::vector<Value> items = iterate(in, v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value f_join(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("join", args, {"d", "attribute"});
  const std::string sep = a.has(0) ? str_of(in, a.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(in, v)) {
    if (!first) out += sep;
    first = false;
    str_append(in, out, a.has(1) ? attribute_path(in, item, str_of(in, a.get(1))) : item);
    in.check_size(out.size());
  }
  return str_result(in, std::move(out));
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("default", args, {"default_value", "boolean"});
  const bool use_default = a.get_bool(1, false) ? !v.truthy() : v.is_undefined();
  return use_default ? a.get_or(0, Value(std::string())) : v;
}

Value f_tojson(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = a.get_bool(0, false);
  o.sort_keys = a.get_bool(3, false);
  if (a.has(1) && !a.get(1).is_none()) {
    const Value& ind = a.get(1);
    if (ind.is_string()) {
      o.indent.emplace(ind.as_string());
    } else {
      o.indent.emplace(static_cast<size_t>(std::clamp<int64_t>(a.get_int(1, 0), 0, 64)), ' ');
    }
    o.item_separator =
        std::string(1, ',');  // move-assign: GCC 12 -Wrestrict false positive on = "lit"
  }
  if (a.has(2) && !a.get(2).is_none()) {
    const Value& sep = a.get(2);
    if (!sep.is_array() || sep.as_array().items.size() != 2 ||
        !sep.as_array().items[0].is_string() || !sep.as_array().items[1].is_string()) {
      render_fail("tojson(): separators must be a pair of strings");
    }
    o.item_separator = sep.as_array().items[0].as_string();
    o.key_separator = sep.as_array().items[1].as_string();
  }
  std::string out;
  o.max_bytes = in.limits().max_output_bytes;
  json_dump(out, v, o);
  return str_result(in, std::move(out));
}

Value f_string(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("string", args, {});
  return str_result(in, str_of(in, v));
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("int", args, {"default", "base"});
  const Value fallback = a.get_or(0, Value(int64_t{0}));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    const double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return fallback;
    return Value(static_cast<int64_t>(d));
  }
  if (!v.is_string()) return fallback;
  const std::string s(py_strip(v.as_string(), "", true, true, true));
  const int base = static_cast<int>(a.get_int(1, 10));
  if (base < 2 || base > 36) render_fail("int(): base must be in 2..36");
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(s.c_str(), &end, base);
  if (!s.empty() && end == s.c_str() + s.size() && errno == 0)
    return Value(static_cast<int64_t>(n));
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) {
    return Value(static_cast<int64_t>(d));
  }
  return fallback;
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("float", args, {"default"});
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string()) {
    const std::string s(py_strip(v.as_string(), "", true, true, true));
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(d);
  }
  return a.get_or(0, Value(0.0));
}

Value f_list(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("list", args, {});
  return list_result(in, iterate(in, v));
}

Value f_items(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("items", args, {});
  if (v.is_undefined()) return Value::array({});
  if (!v.is_object() || v.as_object().is_namespace) {
    render_failf("items(): can only get item pairs from a mapping, not {}", v.type_name());
  }
  std::vector<Value> out;
  for (const auto& [k, item] : v.as_object().entries())
    out.push_back(Value::array({Value(k), item}, true));
  return list_result(in, std::move(out));
}

// select / reject / selectattr / rejectattr share one loop.
Value select_impl(Interpreter& in, const Value& v, CallArgs& args, bool by_attr, bool keep) {
  if (by_attr && args.positional.empty()) render_fail("selectattr(): missing attribute name");
  const std::string attr = by_attr ? str_of(in, args.positional[0]) : "";
  const size_t test_at = by_attr ? 1 : 0;
  std::string test_name;
  CallArgs test_args;
  if (args.positional.size() > test_at) {
    test_name = str_of(in, args.positional[test_at]);
    test_args.positional.assign(args.positional.begin() + static_cast<long>(test_at) + 1,
                                args.positional.end());
    test_args.named = args.named;
  }
  std::vector<Value> out;
  for (const Value& item : iterate(in, v)) {
    in.step();
    const Value subject = by_attr ? attribute_path(in, item, attr) : item;
    CallArgs call_args = test_args;
    const bool pass =
        test_name.empty() ? subject.truthy() : in.apply_test(test_name, subject, call_args);
    if (pass == keep) out.push_back(item);
  }
  return list_result(in, std::move(out));
}
Value f_select(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, false, true);
}
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, false, false);
}
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, true, true);
}
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_impl(in, v, a, true, false);
}

// map(attribute='x', default=...) or map('filter', args...).
Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  std::string attr;
  Value fallback;
  for (const auto& [name, value] : args.named) {
    if (name == "attribute") attr = str_of(in, value);
    if (name == "default") fallback = value;
  }
  if (attr.empty() && args.positional.empty())
    render_fail("map(): a filter name or attribute= is required");
  for (const Value& item : iterate(in, v)) {
    in.step();
    if (!attr.empty()) {
      Value got = attribute_path(in, item, attr);
      out.push_back(got.is_undefined() && !fallback.is_undefined() ? fallback : got);
      continue;
    }
    CallArgs filter_args;
    filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
    filter_args.named = args.named;
    out.push_back(in.apply_filter(str_of(in, args.positional[0]), item, filter_args));
  }
  return list_result(in, std::move(out));
}

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("abs", args, {});
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    if (v.as_int() == std::numeric_limits<int64_t>::min()) render_fail("integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  render_failf("bad operand type for abs(): '{}'", v.type_name());
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("round", args, {"precision", "method"});
  if (!v.is_number()) render_fail("round(): a number is required");
  const int64_t precision = std::clamp<int64_t>(a.get_int(0, 0), -20, 20);
  const std::string method = a.get_string(1, "common");
  const double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.as_float() * scale;
  if (method == "common") {
    x = std::nearbyint(x);  // half to even, as Python's round()
  } else if (method == "ceil") {
    x = std::ceil(x);
  } else if (method == "floor") {
    x = std::floor(x);
  } else {
    render_fail("round(): method must be 'common', 'ceil' or 'floor'");
  }
  return Value(x / scale);
}

Value f_safe(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("safe", args, {});
  return v;
}

Value f_escape(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("escape", args, {});
  std::string out;
  for (char c : str_of(in, v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return str_result(in, std::move(out));
}

Value f_attr(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("attr", args, {"name"});
  return get_attr(in, v, a.get_string(0, ""));
}

Value f_indent(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("indent", args, {"width", "first", "blank"});
  const Value& w = a.get(0);
  const std::string pad =
      w.is_string()
          ? w.as_string()
          : std::string(static_cast<size_t>(std::clamp<int64_t>(a.get_int(0, 4), 0, 256)), ' ');
  CallArgs none;
  const Value lines_v = call_method(in, str_of(in, v) + "\n", "splitlines", none);
  const auto& lines = lines_v.as_array().items;
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i].as_string();
    if (i > 0) out += "\n";
    if (i > 0 && (a.get_bool(2, false) || !line.empty())) out += pad;
    out += line;
    in.check_size(out.size());
  }
  if (a.get_bool(1, false)) out = pad + out;
  return str_result(in, std::move(out));
}

// A sort key: strings folded to lower case unless case_sensitive.
Value sort_key(Interpreter& in, const Value& item, const std::string& attr, bool case_sensitive) {
  Value k = attr.empty() ? item : attribute_path(in, item, attr);
  if (!case_sensitive && k.is_string()) {
    CallArgs none;
    return call_method(in, k.as_string(), "lower", none);
  }
  return k;
}

Value f_sort(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a.get_bool(0, false);
  const bool cs = a.get_bool(1, false);
  const std::string attr = a.has(2) ? str_of(in, a.get(2)) : "";
  std::vector<std::pair<Value, Value>> keyed;  // (key, item)
  for (const Value& item : iterate(in, v)) keyed.emplace_back(sort_key(in, item, attr, cs), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    in.step();
    return reverse ? py_less(y.first, x.first) : py_less(x.first, y.first);
  });
  std::vector<Value> out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return list_result(in, std::move(out));
}

Value f_reverse(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("reverse", args, {});
  if (v.is_string()) {
    CallArgs none;
    return get_slice(in, v, Value(), Value(), Value(int64_t{-1}));
  }
  std::vector<Value> items = iterate(in, v);
  std::reverse(items.begin(), items.end());
  return list_result(in, std::move(items));
}

Value f_sum(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value(int64_t{0}));
  const std::string attr = a.has(0) ? str_of(in, a.get(0)) : "";
  for (const Value& item : iterate(in, v)) {
    total = binary_op(in, "+", total, attr.empty() ? item : attribute_path(in, item, attr));
  }
  return total;
}

Value min_max(Interpreter& in, const Value& v, CallArgs& args, bool want_max) {
  ArgBinder a(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const bool cs = a.get_bool(0, false);
  const std::string attr = a.has(1) ? str_of(in, a.get(1)) : "";
  Value best, best_key;
  for (const Value& item : iterate(in, v)) {
    Value k = sort_key(in, item, attr, cs);
    if (best.is_undefined() || (want_max ? py_less(best_key, k) : py_less(k, best_key))) {
      best = item;
      best_key = k;
    }
  }
  return best.is_undefined() ? Value::undefined("No aggregated item, sequence was empty.") : best;
}
Value f_min(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, false); }
Value f_max(Interpreter& in, const Value& v, CallArgs& a) { return min_max(in, v, a, true); }

Value f_unique(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("unique", args, {"case_sensitive", "attribute"});
  const bool cs = a.get_bool(0, false);
  const std::string attr = a.has(1) ? str_of(in, a.get(1)) : "";
  std::vector<Value> out, keys;
  for (const Value& item : iterate(in, v)) {
    Value k = sort_key(in, item, attr, cs);
    bool seen = false;
    for (const Value& s : keys) {
      in.step();
      if (py_equal(s, k)) {
        seen = true;
        break;
      }
    }
    if (!seen) {
      keys.push_back(std::move(k));
      out.push_back(item);
    }
  }
  return list_result(in, std::move(out));
}

Value f_format(Interpreter& in, const Value& v, CallArgs& args) {
  if (!args.named.empty()) render_fail("format(): keyword arguments are not supported");
  return Value(percent_format(in, str_of(in, v), args.positional));
}

Value f_wordcount(Interpreter& in, const Value& v, CallArgs& args) {
  ArgBinder a("wordcount", args, {});
  CallArgs none;
  return Value(
      static_cast<int64_t>(call_method(in, str_of(in, v), "split", none).as_array().items.size()));
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> kFilters = {
      {"trim", f_trim},
      {"upper", f_upper},
      {"lower", f_lower},
      {"capitalize", f_capitalize},
      {"title", f_title},
      {"replace", f_replace},
      {"length", f_length},
      {"count", f_length},
      {"first", f_first},
      {"last", f_last},
      {"join", f_join},
      {"default", f_default},
      {"d", f_default},
      {"tojson", f_tojson},
      {"string", f_string},
      {"int", f_int},
      {"float", f_float},
      {"list", f_list},
      {"items", f_items},
      {"select", f_select},
      {"reject", f_reject},
      {"selectattr", f_selectattr},
      {"rejectattr", f_rejectattr},
      {"map", f_map},
      {"abs", f_abs},
      {"round", f_round},
      {"safe", f_safe},
      {"escape", f_escape},
      {"e", f_escape},
      {"attr", f_attr},
      {"indent", f_indent},
      {"sort", f_sort},
      {"reverse", f_reverse},
      {"sum", f_sum},
      {"min", f_min},
      {"max", f_max},
      {"unique", f_unique},
      {"format", f_format},
      {"wordcount", f_wordcount},
  };
  auto it = kFilters.find(name);
  return it == kFilters.end() ? nullptr : it->second;
}

}  // namespace tally::jinja
