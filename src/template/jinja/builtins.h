// What templates can call: filters (x | trim), tests (x is defined), methods on str / dict
// / list (x.strip()), global functions (range, namespace, raise_exception, strftime_now),
// and the operators and lookups the evaluator shares with them.
#pragma once

#include <ctime>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "template/jinja/interpreter.h"
#include "template/jinja/value.h"

namespace tally::jinja {

using FilterFn = Value (*)(Interpreter&, const Value& operand, CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& operand, CallArgs& args);
using MethodFn = Value (*)(Interpreter&, const Value& self, CallArgs& args);

FilterFn find_filter(std::string_view name);  // null if unknown
TestFn find_test(std::string_view name);
MethodFn find_method(const Value& self, std::string_view name);

// Binds a call's arguments to parameter names, as Python does: positional first, then by
// name. Unknown names, duplicates and surplus positionals are render errors.
class ArgBinder {
 public:
  ArgBinder(std::string_view function, CallArgs& args,
            std::initializer_list<std::string_view> params);
  bool has(size_t i) const { return bound_[i] != nullptr; }
  const Value& get(size_t i) const;  // undefined when not given
  Value get_or(size_t i, Value fallback) const { return has(i) ? *bound_[i] : fallback; }
  // The argument as an int / string / bool, or a render error naming the parameter.
  int64_t get_int(size_t i, int64_t fallback) const;
  std::string get_string(size_t i, std::string fallback) const;
  bool get_bool(size_t i, bool fallback) const { return has(i) ? get(i).truthy() : fallback; }

 private:
  std::string function_;
  std::vector<std::string_view> params_;
  std::vector<const Value*> bound_;
};

// str(v) bounded by the render's size limit.
std::string str_of(Interpreter& in, const Value& v);
void str_append(Interpreter& in, std::string& out, const Value& v);

// Operators (a op b) with Python semantics and the interpreter's size budget.
Value binary_op(Interpreter& in, std::string_view op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);  // `item in container`

// x.name / x[key] / x[start:stop:step]; undefined when absent, as Jinja2.
// Methods come back bound to `object`.
Value get_attr(Interpreter& in, const Value& object, const std::string& name);
Value get_item(const Value& object, const Value& key);
Value get_slice(Interpreter& in, const Value& object, const Value& start, const Value& stop,
                const Value& step);

// The items a for loop visits: list items, dict keys, string characters; undefined is empty.
// Charges the list (one item per character for a string) before building it.
std::vector<Value> iterate(Interpreter& in, const Value& v);

// A render error for using an undefined value ("'x' is undefined").
[[noreturn]] void fail_undefined(const Value& v);

struct GlobalsConfig {
  std::optional<std::time_t> now;  // strftime_now's clock; nullopt = the real time (local)
};
// range, namespace, dict, raise_exception, strftime_now, joiner-free core set.
void install_globals(Scope& globals, Interpreter& in, const GlobalsConfig& config);

// Python printf-style formatting ("%s: %d" % (a, b)) for the % operator and |format.
std::string percent_format(Interpreter& in, const std::string& fmt, const std::vector<Value>& args);

}  // namespace tally::jinja
