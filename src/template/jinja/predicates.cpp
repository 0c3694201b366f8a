// Jinja2's tests: `x is defined`, `x is none`, `x is string`, `x is equalto 3`, ...
#include <unordered_map>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/value_ops.h"

namespace tally::jinja {
namespace {

using Type = Value::Type;

template <typename F>
bool no_args(const char* name, CallArgs& args, F&& f) {
  ArgBinder a(name, args, {});
  return f();
}

bool t_defined(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("defined", a, [&] { return !v.is_undefined(); });
}
bool t_undefined(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("undefined", a, [&] { return v.is_undefined(); });
}
bool t_none(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("none", a, [&] { return v.is_none(); });
}
bool t_boolean(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("boolean", a, [&] { return v.is_bool(); });
}
bool t_true(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("true", a, [&] { return v.is_bool() && v.as_bool(); });
}
bool t_false(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("false", a, [&] { return v.is_bool() && !v.as_bool(); });
}
bool t_integer(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("integer", a, [&] { return v.is_int(); });
}
bool t_float(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("float", a, [&] { return v.is_float(); });
}
bool t_number(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("number", a, [&] { return v.is_number(); });
}
bool t_string(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("string", a, [&] { return v.is_string(); });
}
bool t_mapping(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("mapping", a, [&] { return v.is_object() && !v.as_object().is_namespace; });
}
bool t_iterable(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("iterable", a, [&] { return v.is_string() || v.is_array() || v.is_object(); });
}
bool t_sequence(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("sequence", a, [&] { return v.is_string() || v.is_array() || v.is_object(); });
}
bool t_callable(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("callable", a, [&] { return v.is_function(); });
}

bool t_lower(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("lower", a, [&] {
    if (!v.is_string()) return false;
    for (char c : v.as_string())
      if (c >= 'A' && c <= 'Z') return false;
    return true;
  });
}
bool t_upper(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("upper", a, [&] {
    if (!v.is_string()) return false;
    for (char c : v.as_string())
      if (c >= 'a' && c <= 'z') return false;
    return true;
  });
}

int64_t int_operand(const Value& v, const char* test) {
  if (!v.is_int() && !v.is_bool()) render_failf("'{}' test needs an integer", test);
  return v.as_int();
}
bool t_odd(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("odd", a, [&] { return int_operand(v, "odd") % 2 != 0; });
}
bool t_even(Interpreter&, const Value& v, CallArgs& a) {
  return no_args("even", a, [&] { return int_operand(v, "even") % 2 == 0; });
}
bool t_divisibleby(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("divisibleby", args, {"num"});
  const int64_t d = a.get_int(0, 0);
  if (d == 0) render_fail("divisibleby: division by zero");
  return int_operand(v, "divisibleby") % d == 0;
}

const Value& other(const char* name, const ArgBinder& a) {
  if (!a.has(0)) render_failf("{} test needs a value to compare with", name);
  return a.get(0);
}
bool t_eq(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("eq", args, {"other"});
  return py_equal(v, other("eq", a));
}
bool t_ne(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("ne", args, {"other"});
  return !py_equal(v, other("ne", a));
}
bool t_lt(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("lt", args, {"other"});
  return py_less(v, other("lt", a));
}
bool t_le(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("le", args, {"other"});
  const Value& o = other("le", a);
  return !py_less(o, v);
}
bool t_gt(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("gt", args, {"other"});
  return py_less(other("gt", a), v);
}
bool t_ge(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("ge", args, {"other"});
  return !py_less(v, other("ge", a));
}
bool t_in(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("in", args, {"seq"});
  return contains(other("in", a), v);
}
bool t_sameas(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder a("sameas", args, {"other"});
  const Value& o = other("sameas", a);
  if (v.type() != o.type()) return false;
  switch (v.type()) {
    case Type::kArray:
      return &v.as_array() == &o.as_array();
    case Type::kObject:
      return &v.as_object() == &o.as_object();
    case Type::kFunction:
      return &v.as_function() == &o.as_function();
    default:
      return py_equal(v, o);  // None, True, small ints: identical in CPython
  }
}

}  // namespace

TestFn find_test(std::string_view name) {
  static const std::unordered_map<std::string_view, TestFn> kTests = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"boolean", t_boolean},
      {"true", t_true},
      {"false", t_false},
      {"integer", t_integer},
      {"float", t_float},
      {"number", t_number},
      {"string", t_string},
      {"mapping", t_mapping},
      {"iterable", t_iterable},
      {"sequence", t_sequence},
      {"callable", t_callable},
      {"lower", t_lower},
      {"upper", t_upper},
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"==", t_eq},
      {"ne", t_ne},
      {"!=", t_ne},
      {"lt", t_lt},
      {"lessthan", t_lt},
      {"<", t_lt},
      {"le", t_le},
      {"<=", t_le},
      {"gt", t_gt},
      {"greaterthan", t_gt},
      {">", t_gt},
      {"ge", t_ge},
      {">=", t_ge},
      {"in", t_in},
      {"sameas", t_sameas},
  };
  auto it = kTests.find(name);
  return it == kTests.end() ? nullptr : it->second;
}

}  // namespace tally::jinja
