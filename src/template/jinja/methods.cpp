// Python methods templates call on values: str (strip, split, startswith, ...), dict (items,
// get, ...) and list (index, count), and attribute lookup (x.name) that finds them.
// Case mapping is ASCII-only: other characters pass through unchanged.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <unordered_map>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/value_ops.h"
#include "tokenizer/utf8.h"

namespace tally::jinja {
namespace {

char ascii_upper(char c) { return c >= 'a' && c <= 'z' ? static_cast<char>(c - 32) : c; }
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }
bool ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool ascii_digit(char c) { return c >= '0' && c <= '9'; }

const std::string& self_str(const Value& self) { return self.as_string(); }

Value str_strip_impl(const Value& self, CallArgs& args, const char* name, bool l, bool r) {
  ArgBinder a(name, args, {"chars"});
  const bool dflt = !a.has(0) || a.get(0).is_none();
  const std::string chars = dflt ? "" : a.get_string(0, "");
  return Value(py_strip(self_str(self), chars, l, r, dflt));
}
Value str_strip(Interpreter&, const Value& s, CallArgs& a) {
  return str_strip_impl(s, a, "strip", true, true);
}
Value str_lstrip(Interpreter&, const Value& s, CallArgs& a) {
  return str_strip_impl(s, a, "lstrip", true, false);
}
Value str_rstrip(Interpreter&, const Value& s, CallArgs& a) {
  return str_strip_impl(s, a, "rstrip", false, true);
}

Value str_upper(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("upper", args, {});
  std::string s = self_str(self);
  std::transform(s.begin(), s.end(), s.begin(), ascii_upper);
  return Value(std::move(s));
}

Value str_lower(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("lower", args, {});
  std::string s = self_str(self);
  std::transform(s.begin(), s.end(), s.begin(), ascii_lower);
  return Value(std::move(s));
}

// Python's str.title(): a letter after a letter is lowered, any other letter raised.
Value str_title(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("title", args, {});
  std::string s = self_str(self);
  bool prev_cased = false;
  for (char& c : s) {
    c = prev_cased ? ascii_lower(c) : ascii_upper(c);
    prev_cased = ascii_alpha(c);
  }
  return Value(std::move(s));
}

Value str_capitalize(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("capitalize", args, {});
  std::string s = self_str(self);
  for (size_t i = 0; i < s.size(); ++i) s[i] = i == 0 ? ascii_upper(s[i]) : ascii_lower(s[i]);
  return Value(std::move(s));
}

bool affix_match(const std::string& s, const Value& affix, bool prefix, const char* name) {
  auto one = [&](const Value& v) {
    if (!v.is_string()) render_failf("{}() argument must be str or a tuple of str", name);
    const std::string& x = v.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0
                  : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_array()) {
    return std::any_of(affix.as_array().items.begin(), affix.as_array().items.end(), one);
  }
  return one(affix);
}

Value str_startswith(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("startswith", args, {"prefix"});
  return Value(affix_match(self_str(self), a.get(0), true, "startswith"));
}

Value str_endswith(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("endswith", args, {"suffix"});
  return Value(affix_match(self_str(self), a.get(0), false, "endswith"));
}

// str.split / str.rsplit: by a separator, or by runs of white space when none is given.
Value split_impl(Interpreter& in, const Value& self, CallArgs& args, bool from_right) {
  ArgBinder a(from_right ? "rsplit" : "split", args, {"sep", "maxsplit"});
  const std::string& s = self_str(self);
  int64_t maxsplit = a.get_int(1, -1);
  // Parts in the order found (right to left for rsplit: reversed at the end, not inserted at
  // the front, which would be quadratic), each charged before it is stored.
  std::vector<std::string> parts;
  auto add_part = [&](std::string_view part) {
    in.charge_items(1);
    in.charge(part.size());
    parts.emplace_back(part);
  };
  if (!a.has(0) || a.get(0).is_none()) {
    std::vector<std::pair<size_t, size_t>> words;  // [begin, end) of each word
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && py_is_space(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) break;
      size_t e = i;
      while (e < s.size() && !py_is_space(static_cast<unsigned char>(s[e]))) ++e;
      in.charge(sizeof(std::pair<size_t, size_t>));
      words.emplace_back(i, e);
      i = e;
    }
    const size_t n = words.size();
    const size_t limit = maxsplit < 0 ? n : std::min(n, static_cast<size_t>(maxsplit) + 1);
    for (size_t k = 0; k < limit; ++k) {
      const bool last = k + 1 == limit && limit < n;
      if (from_right) {
        const size_t idx = n - 1 - k;
        const size_t begin = last ? 0 : words[idx].first;
        const std::string_view w = std::string_view(s).substr(begin, words[idx].second - begin);
        add_part(w);
      } else {
        const size_t end = last ? s.size() : words[k].second;
        const std::string_view w = std::string_view(s).substr(words[k].first, end - words[k].first);
        add_part(w);
      }
    }
  } else {
    const std::string sep = a.get_string(0, "");
    if (sep.empty()) render_fail("empty separator");
    std::string_view rest = s;
    while (maxsplit != 0) {
      const size_t at = from_right ? rest.rfind(sep) : rest.find(sep);
      if (at == std::string_view::npos) break;
      if (from_right) {
        add_part(rest.substr(at + sep.size()));
        rest = rest.substr(0, at);
      } else {
        add_part(rest.substr(0, at));
        rest = rest.substr(at + sep.size());
      }
      if (maxsplit > 0) --maxsplit;
      in.step();
    }
    add_part(rest);
  }
  if (from_right) std::reverse(parts.begin(), parts.end());
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::array(std::move(out));
}
Value str_split(Interpreter& in, const Value& s, CallArgs& a) {
  return split_impl(in, s, a, false);
}
Value str_rsplit(Interpreter& in, const Value& s, CallArgs& a) {
  return split_impl(in, s, a, true);
}

Value str_splitlines(Interpreter& in, const Value& self, CallArgs& args) {
  ArgBinder a("splitlines", args, {"keepends"});
  const bool keep = a.get_bool(0, false);
  const std::string& s = self_str(self);
  std::vector<Value> out;
  size_t begin = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\n' && s[i] != '\r') continue;
    size_t end = i + 1;
    if (s[i] == '\r' && end < s.size() && s[end] == '\n') ++end;
    in.charge_items(1);
    in.charge((keep ? end : i) - begin);
    out.emplace_back(s.substr(begin, (keep ? end : i) - begin));
    begin = end;
    i = end - 1;
  }
  if (begin < s.size()) {
    in.charge_items(1);
    in.charge(s.size() - begin);
    out.emplace_back(s.substr(begin));
  }
  return Value::array(std::move(out));
}

Value str_replace(Interpreter& in, const Value& self, CallArgs& args) {
  ArgBinder a("replace", args, {"old", "new", "count"});
  const std::string from = a.get_string(0, "");
  const std::string to = a.get_string(1, "");
  int64_t count = a.get_int(2, -1);
  const std::string& s = self_str(self);
  std::string out;
  size_t pos = 0;
  if (from.empty()) {  // Python inserts `to` between characters and at both ends
    const std::vector<size_t> offs = utf8_offsets(s);
    for (size_t k = 0; k < offs.size(); ++k) {  // n characters, n + 1 gaps
      if (count != 0) {
        out += to;
        if (count > 0) --count;
      }
      if (k + 1 < offs.size()) out.append(s, offs[k], offs[k + 1] - offs[k]);
      in.check_size(out.size());
    }
    in.charge(out.size());
    return Value(std::move(out));
  }
  while (count != 0) {
    const size_t at = s.find(from, pos);
    if (at == std::string::npos) break;
    out.append(s, pos, at - pos);
    out += to;
    in.check_size(out.size());
    pos = at + from.size();
    if (count > 0) --count;
  }
  out.append(s, pos, std::string::npos);
  in.check_size(out.size());
  in.charge(out.size());
  return Value(std::move(out));
}

Value str_find_impl(const Value& self, CallArgs& args, const char* name, bool from_right) {
  ArgBinder a(name, args, {"sub"});
  const std::string sub = a.get_string(0, "");
  const std::string& s = self_str(self);
  const size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) return Value(int64_t{-1});
  return Value(static_cast<int64_t>(utf8_length(std::string_view(s).substr(0, at))));
}
Value str_find(Interpreter&, const Value& s, CallArgs& a) {
  return str_find_impl(s, a, "find", false);
}
Value str_rfind(Interpreter&, const Value& s, CallArgs& a) {
  return str_find_impl(s, a, "rfind", true);
}

Value str_count(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("count", args, {"sub"});
  const std::string sub = a.get_string(0, "");
  const std::string& s = self_str(self);
  if (sub.empty()) return Value(static_cast<int64_t>(utf8_length(s) + 1));
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
  return Value(n);
}

Value str_join(Interpreter& in, const Value& self, CallArgs& args) {
  ArgBinder a("join", args, {"iterable"});
  std::string out;
  bool first = true;
  for (const Value& v : iterate(in, a.get(0))) {
    if (!v.is_string()) render_failf("join(): sequence item must be str, not {}", v.type_name());
    if (!first) out += self_str(self);
    first = false;
    out += v.as_string();
    in.check_size(out.size());
  }
  in.charge(out.size());
  return Value(std::move(out));
}

template <bool (*Pred)(char)>
Value str_is(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("is*", args, {});
  const std::string& s = self_str(self);
  return Value(!s.empty() && std::all_of(s.begin(), s.end(), Pred));
}
bool pred_digit(char c) { return ascii_digit(c); }
bool pred_alpha(char c) { return ascii_alpha(c); }
bool pred_alnum(char c) { return ascii_alpha(c) || ascii_digit(c); }
bool pred_space(char c) { return py_is_space(static_cast<unsigned char>(c)); }

Value str_islower(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("islower", args, {});
  const std::string& s = self_str(self);
  const bool any_lower =
      std::any_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
  const bool any_upper =
      std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  return Value(any_lower && !any_upper);
}

Value str_isupper(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("isupper", args, {});
  const std::string& s = self_str(self);
  const bool any_lower =
      std::any_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
  const bool any_upper =
      std::any_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
  return Value(any_upper && !any_lower);
}

Value str_removeprefix(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("removeprefix", args, {"prefix"});
  const std::string p = a.get_string(0, "");
  const std::string& s = self_str(self);
  return Value(s.compare(0, p.size(), p) == 0 ? s.substr(p.size()) : s);
}

Value str_removesuffix(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("removesuffix", args, {"suffix"});
  const std::string p = a.get_string(0, "");
  const std::string& s = self_str(self);
  const bool match = p.size() <= s.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
  return Value(match && !p.empty() ? s.substr(0, s.size() - p.size()) : s);
}

// str.format with "{}", "{0}" and "{name}" fields (no format specs).
Value str_format(Interpreter& in, const Value& self, CallArgs& args) {
  const std::string& s = self_str(self);
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if ((c == '{' || c == '}') && i + 1 < s.size() && s[i + 1] == c) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '{') {
      if (c == '}') render_fail("Single '}' encountered in format string");
      out.push_back(c);
      continue;
    }
    const size_t close = s.find('}', i);
    if (close == std::string::npos) render_fail("Single '{' encountered in format string");
    const std::string field = s.substr(i + 1, close - i - 1);
    const Value* v = nullptr;
    if (field.empty() || std::all_of(field.begin(), field.end(), ascii_digit)) {
      size_t idx = auto_index;
      if (field.empty()) {
        ++auto_index;
      } else if (std::from_chars(field.data(), field.data() + field.size(), idx).ec !=
                 std::errc()) {
        render_fail("Replacement index out of range");
      }
      if (idx >= args.positional.size()) render_fail("Replacement index out of range");
      v = &args.positional[idx];
    } else {
      for (const auto& [name, value] : args.named) {
        if (name == field) v = &value;
      }
      if (v == nullptr) render_failf("format(): no argument named '{}'", field);
    }
    str_append(in, out, *v);
    in.check_size(out.size());
    i = close;
  }
  in.charge(out.size());
  return Value(std::move(out));
}

Value dict_items(Interpreter& in, const Value& self, CallArgs& args) {
  ArgBinder a("items", args, {});
  std::vector<Value> out;
  for (const auto& [k, v] : self.as_object().entries())
    out.push_back(Value::array({Value(k), v}, true));
  in.charge(out.size() * 3 * sizeof(Value));
  return Value::array(std::move(out));
}

Value dict_keys(Interpreter& in, const Value& self, CallArgs& args) {
  ArgBinder a("keys", args, {});
  std::vector<Value> out;
  for (const auto& [k, v] : self.as_object().entries()) out.emplace_back(k);
  in.charge(out.size() * sizeof(Value));
  return Value::array(std::move(out));
}

Value dict_values(Interpreter& in, const Value& self, CallArgs& args) {
  ArgBinder a("values", args, {});
  std::vector<Value> out;
  for (const auto& [k, v] : self.as_object().entries()) out.push_back(v);
  in.charge(out.size() * sizeof(Value));
  return Value::array(std::move(out));
}

Value dict_get(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("get", args, {"key", "default"});
  const Value& key = a.get(0);
  const Value* v = key.is_string() ? self.as_object().find(key.as_string()) : nullptr;
  return v != nullptr ? *v : a.get_or(1, Value::none());
}

Value list_index(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("index", args, {"value"});
  const auto& items = self.as_array().items;
  for (size_t i = 0; i < items.size(); ++i) {
    if (py_equal(items[i], a.get(0))) return Value(static_cast<int64_t>(i));
  }
  render_fail("list.index(x): x not in list");
}

Value list_count(Interpreter&, const Value& self, CallArgs& args) {
  ArgBinder a("count", args, {"value"});
  const auto& items = self.as_array().items;
  return Value(static_cast<int64_t>(std::count_if(
      items.begin(), items.end(), [&](const Value& v) { return py_equal(v, a.get(0)); })));
}

using MethodTable = std::unordered_map<std::string_view, MethodFn>;

const MethodTable& string_methods() {
  static const MethodTable kTable = {
      {"strip", str_strip},
      {"lstrip", str_lstrip},
      {"rstrip", str_rstrip},
      {"upper", str_upper},
      {"lower", str_lower},
      {"title", str_title},
      {"capitalize", str_capitalize},
      {"startswith", str_startswith},
      {"endswith", str_endswith},
      {"split", str_split},
      {"rsplit", str_rsplit},
      {"splitlines", str_splitlines},
      {"replace", str_replace},
      {"find", str_find},
      {"rfind", str_rfind},
      {"count", str_count},
      {"join", str_join},
      {"format", str_format},
      {"isdigit", str_is<pred_digit>},
      {"isalpha", str_is<pred_alpha>},
      {"isalnum", str_is<pred_alnum>},
      {"isspace", str_is<pred_space>},
      {"islower", str_islower},
      {"isupper", str_isupper},
      {"removeprefix", str_removeprefix},
      {"removesuffix", str_removesuffix},
  };
  return kTable;
}

const MethodTable& dict_methods() {
  static const MethodTable kTable = {
      {"items", dict_items}, {"keys", dict_keys}, {"values", dict_values}, {"get", dict_get}};
  return kTable;
}

const MethodTable& list_methods() {
  static const MethodTable kTable = {{"index", list_index}, {"count", list_count}};
  return kTable;
}

}  // namespace

MethodFn find_method(const Value& self, std::string_view name) {
  const MethodTable* table = nullptr;
  if (self.is_string()) {
    table = &string_methods();
  } else if (self.is_object() && !self.as_object().is_namespace) {
    table = &dict_methods();
  } else if (self.is_array()) {
    table = &list_methods();
  }
  if (table == nullptr) return nullptr;
  auto it = table->find(name);
  return it == table->end() ? nullptr : it->second;
}

Value get_attr(Interpreter& in, const Value& object, const std::string& name) {
  if (object.is_undefined()) fail_undefined(object);
  if (MethodFn fn = find_method(object, name)) {
    Interpreter* interp = &in;
    return Value::function(
        name, [interp, object, fn](CallArgs& args) { return fn(*interp, object, args); });
  }
  if (object.is_object()) {
    if (const Value* v = object.as_object().find(name)) return *v;
  }
  return Value::undefined(
      fmt::format("'{} object' has no attribute '{}'", object.type_name(), name));
}

}  // namespace tally::jinja
