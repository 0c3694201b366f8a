// The values a Jinja template computes with, shaped after the Python objects Jinja2 sees when
// transformers renders a chat template: undefined, None, bool, int, float, str, list, dict and
// callables. Lists and dicts are shared (Python reference semantics) and immutable once built,
// except namespace() objects, whose attributes `{% set ns.x = ... %}` may change.
//
// Containers remember their nesting depth and whether they hold a namespace, so that a
// template can neither build unboundedly deep values nor a cycle (a namespace may not hold a
// namespace): every recursive walk over a value is bounded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace tally::jinja {

class Value;
struct CallArgs;

// Deepest container nesting a value may have (JSON input included).
inline constexpr uint32_t kMaxValueDepth = 128;

struct Array {
  std::vector<Value> items;
  bool is_tuple = false;  // printed as (a, b)
  uint32_t depth = 1;
  bool has_namespace = false;
};

// A dict with string keys in insertion order (Python 3.7+ dicts).
class Object {
 public:
  const Value* find(std::string_view key) const;
  // Inserts or replaces; a replaced key keeps its place.
  void set(std::string key, Value value);
  size_t size() const;  // out of line: Value is incomplete here (clang instantiates eagerly)
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }

  bool is_namespace = false;
  uint32_t depth = 1;
  bool has_namespace = false;

 private:
  std::vector<std::pair<std::string, Value>> entries_;
  std::unordered_map<std::string, size_t> index_;  // built once there are many keys
};

// A callable: a built-in (range, raise_exception, a bound string method) or a macro.
struct Function {
  std::string name;
  std::function<Value(CallArgs&)> call;
};

class Value {
 public:
  enum class Type : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kArray,
    kObject,
    kFunction
  };
  struct Undefined {
    std::string hint;  // "'x' is undefined" for error messages
  };
  struct None {};

  Value() : v_(Undefined{}) {}
  static Value undefined(std::string hint = {}) { return Value(Undefined{std::move(hint)}); }
  static Value none() { return Value(None{}); }
  Value(bool b) : v_(b) {}                       // NOLINT
  Value(int64_t i) : v_(i) {}                    // NOLINT
  Value(int i) : v_(static_cast<int64_t>(i)) {}  // NOLINT
  Value(double d) : v_(d) {}                     // NOLINT
  // Strings are shared, as in Python: copying a Value never copies the text.
  Value(std::string s) : v_(std::make_shared<const std::string>(std::move(s))) {}  // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}                             // NOLINT
  Value(const char* s) : Value(std::string(s)) {}                                  // NOLINT
  // Containers: depth and has_namespace are computed from the items here.
  static Value array(std::vector<Value> items, bool is_tuple = false);
  static Value object(std::shared_ptr<Object> obj) { return Value(std::move(obj)); }
  static Value function(std::string name, std::function<Value(CallArgs&)> fn);

  Type type() const { return static_cast<Type>(v_.index()); }
  bool is_undefined() const { return type() == Type::kUndefined; }
  bool is_none() const { return type() == Type::kNone; }
  bool is_bool() const { return type() == Type::kBool; }
  bool is_int() const { return type() == Type::kInt; }
  bool is_float() const { return type() == Type::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }  // bool is an int
  bool is_string() const { return type() == Type::kString; }
  bool is_array() const { return type() == Type::kArray; }
  bool is_object() const { return type() == Type::kObject; }
  bool is_function() const { return type() == Type::kFunction; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return is_bool() ? (as_bool() ? 1 : 0) : std::get<int64_t>(v_); }
  double as_float() const;  // any number
  const std::string& as_string() const { return *std::get<std::shared_ptr<const std::string>>(v_); }
  const Array& as_array() const { return *std::get<std::shared_ptr<Array>>(v_); }
  const Object& as_object() const { return *std::get<std::shared_ptr<Object>>(v_); }
  const std::shared_ptr<Object>& object_ptr() const {
    return std::get<std::shared_ptr<Object>>(v_);
  }
  const Function& as_function() const { return *std::get<std::shared_ptr<Function>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }

  // Container nesting (0 for scalars) and whether a namespace is inside (or is this).
  uint32_t depth() const;
  bool has_namespace() const;

  // Python truthiness: empty, zero, None and undefined are false.
  bool truthy() const;
  // The Python type name ("str", "int", "dict", "NoneType"...), for error messages.
  std::string_view type_name() const;

 private:
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(None n) : v_(n) {}
  explicit Value(std::shared_ptr<Array> a) : v_(std::move(a)) {}
  explicit Value(std::shared_ptr<Object> o) : v_(std::move(o)) {}
  explicit Value(std::shared_ptr<Function> f) : v_(std::move(f)) {}

  std::variant<Undefined, None, bool, int64_t, double, std::shared_ptr<const std::string>,
               std::shared_ptr<Array>, std::shared_ptr<Object>, std::shared_ptr<Function>>
      v_;
};

// Arguments of a call: positional first, then name=value pairs.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> named;
};

}  // namespace tally::jinja
