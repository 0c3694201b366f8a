// Operators, lookups, slicing and argument binding shared by the evaluator and the built-ins.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/value_ops.h"
#include "tokenizer/utf8.h"

namespace tally::jinja {
namespace {

[[noreturn]] void fail_operands(std::string_view op, const Value& a, const Value& b) {
  render_failf("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(),
               b.type_name());
}

// a op b for int64, a render error on overflow (Python would grow a big integer).
template <typename Op>
int64_t checked(int64_t a, int64_t b, Op op) {
  int64_t r = 0;
  if (op(a, b, &r)) render_fail("integer overflow");
  return r;
}
constexpr auto kAdd = [](int64_t a, int64_t b, int64_t* r) {
  return __builtin_add_overflow(a, b, r);
};
constexpr auto kSub = [](int64_t a, int64_t b, int64_t* r) {
  return __builtin_sub_overflow(a, b, r);
};
constexpr auto kMul = [](int64_t a, int64_t b, int64_t* r) {
  return __builtin_mul_overflow(a, b, r);
};

Value repeat(Interpreter& in, const Value& seq, int64_t n) {
  if (n <= 0)
    return seq.is_string() ? Value(std::string()) : Value::array({}, seq.as_array().is_tuple);
  const auto count = static_cast<uint64_t>(n);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && count > in.limits().max_output_bytes / s.size()) {
      in.check_size(in.limits().max_output_bytes + 1);
    }
    in.charge(s.size() * count);
    std::string out;
    out.reserve(s.size() * count);
    for (uint64_t i = 0; i < count; ++i) out += s;
    return Value(std::move(out));
  }
  const auto& items = seq.as_array().items;
  if (!items.empty() && count > in.limits().max_output_bytes / items.size()) {
    in.check_size(in.limits().max_output_bytes + 1);
  }
  if (!items.empty() && count > in.limits().max_alloc_bytes / sizeof(Value) / items.size()) {
    in.charge(in.limits().max_alloc_bytes + 1);
  }
  in.charge(items.size() * count * sizeof(Value));
  std::vector<Value> out;
  out.reserve(items.size() * count);
  for (uint64_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::array(std::move(out), seq.as_array().is_tuple);
}

int64_t int_pow(int64_t base, int64_t exp) {
  int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = checked(result, base, kMul);
    exp >>= 1;
    if (exp > 0) base = checked(base, base, kMul);
  }
  return result;
}

Value arithmetic(std::string_view op, const Value& a, const Value& b) {
  const bool ints = !a.is_float() && !b.is_float();
  if (ints) {
    const int64_t x = a.as_int(), y = b.as_int();
    if (op == "+") return Value(checked(x, y, kAdd));
    if (op == "-") return Value(checked(x, y, kSub));
    if (op == "*") return Value(checked(x, y, kMul));
    if (op == "//" || op == "%") {
      if (y == 0) render_fail("integer division or modulo by zero");
      if (x == std::numeric_limits<int64_t>::min() && y == -1) render_fail("integer overflow");
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
      return op == "//" ? Value(q) : Value(m);
    }
    if (op == "**" && y >= 0) return Value(int_pow(x, y));
  }
  const double x = a.as_float(), y = b.as_float();
  if (op == "+") return Value(x + y);
  if (op == "-") return Value(x - y);
  if (op == "*") return Value(x * y);
  if (op == "/") {
    if (y == 0.0) render_fail("division by zero");
    return Value(x / y);
  }
  if (op == "//" || op == "%") {
    if (y == 0.0) render_fail("float division or modulo by zero");
    if (op == "//") return Value(std::floor(x / y));
    double m = std::fmod(x, y);
    if (m != 0.0 && ((m < 0) != (y < 0))) m += y;
    return Value(m);
  }
  if (op == "**") return Value(std::pow(x, y));
  fail_operands(op, a, b);
}

}  // namespace

std::string str_of(Interpreter& in, const Value& v) {
  return v.is_string() ? v.as_string() : py_str(v, in.limits().max_output_bytes);
}

void str_append(Interpreter& in, std::string& out, const Value& v) {
  py_str_append(out, v, in.limits().max_output_bytes);
}

void fail_undefined(const Value& v) {
  render_fail(v.undefined_hint().empty() ? "undefined value" : v.undefined_hint());
}

ArgBinder::ArgBinder(std::string_view function, CallArgs& args,
                     std::initializer_list<std::string_view> params)
    : function_(function), params_(params), bound_(params.size(), nullptr) {
  if (args.positional.size() > params_.size()) {
    render_failf("{}() takes at most {} arguments ({} given)", function_,
                 std::to_string(params_.size()), std::to_string(args.positional.size()));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [name, value] : args.named) {
    auto it = std::find(params_.begin(), params_.end(), name);
    if (it == params_.end()) {
      render_failf("{}() got an unexpected keyword argument '{}'", function_, name);
    }
    const auto idx = static_cast<size_t>(it - params_.begin());
    if (bound_[idx] != nullptr) {
      render_failf("{}() got multiple values for argument '{}'", function_, name);
    }
    bound_[idx] = &value;
  }
}

const Value& ArgBinder::get(size_t i) const {
  static const Value kUndefined;
  return bound_[i] != nullptr ? *bound_[i] : kUndefined;
}

int64_t ArgBinder::get_int(size_t i, int64_t fallback) const {
  if (!has(i)) return fallback;
  const Value& v = get(i);
  if (v.is_int() || v.is_bool()) return v.as_int();
  if (v.is_float()) return static_cast<int64_t>(v.as_float());
  render_failf("{}(): '{}' must be an integer, not {}", function_, params_[i], v.type_name());
}

std::string ArgBinder::get_string(size_t i, std::string fallback) const {
  if (!has(i)) return fallback;
  const Value& v = get(i);
  if (!v.is_string()) {
    render_failf("{}(): '{}' must be a string, not {}", function_, params_[i], v.type_name());
  }
  return v.as_string();
}

Value binary_op(Interpreter& in, std::string_view op, const Value& a, const Value& b) {
  if (op == "~") {
    if (a.is_string() && b.is_string()) {  // the common case, checked before it is built
      in.check_size(a.as_string().size() + b.as_string().size());
    }
    std::string s = str_of(in, a);
    str_append(in, s, b);
    in.check_size(s.size());
    in.charge(s.size());
    return Value(std::move(s));
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      in.check_size(a.as_string().size() + b.as_string().size());
      in.charge(a.as_string().size() + b.as_string().size());
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_array() && b.is_array()) {
      if (a.as_array().is_tuple != b.as_array().is_tuple) {
        render_failf("can only concatenate {} (not \"{}\") to {}", a.type_name(), b.type_name(),
                     a.type_name());
      }
      in.charge((a.as_array().items.size() + b.as_array().items.size()) * sizeof(Value));
      std::vector<Value> items = a.as_array().items;
      items.insert(items.end(), b.as_array().items.begin(), b.as_array().items.end());
      return Value::array(std::move(items), a.as_array().is_tuple);
    }
    if (a.is_string()) {
      render_failf("can only concatenate str (not \"{}\") to str", b.type_name());
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_array()) && (b.is_int() || b.is_bool())) {
      return repeat(in, a, b.as_int());
    }
    if ((b.is_string() || b.is_array()) && (a.is_int() || a.is_bool())) {
      return repeat(in, b, a.as_int());
    }
  }
  if (op == "%" && a.is_string()) {
    std::vector<Value> args =
        b.is_array() && b.as_array().is_tuple ? b.as_array().items : std::vector<Value>{b};
    return Value(percent_format(in, a.as_string(), args));
  }
  fail_operands(op, a, b);
}

bool contains(const Value& container, const Value& item) {
  switch (container.type()) {
    case Value::Type::kUndefined:
      return false;
    case Value::Type::kString:
      if (!item.is_string()) {
        render_failf("'in <string>' requires string as left operand, not {}", item.type_name());
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Type::kArray:
      for (const Value& v : container.as_array().items) {
        if (py_equal(v, item)) return true;
      }
      return false;
    case Value::Type::kObject:
      return item.is_string() && container.as_object().find(item.as_string()) != nullptr;
    default:
      render_failf("argument of type '{}' is not iterable", container.type_name());
  }
}

Value get_item(const Value& object, const Value& key) {
  switch (object.type()) {
    case Value::Type::kUndefined:
      fail_undefined(object);
    case Value::Type::kObject: {
      if (!key.is_string()) break;
      const Value* v = object.as_object().find(key.as_string());
      if (v != nullptr) return *v;
      return Value::undefined("'dict object' has no attribute '" + key.as_string() + "'");
    }
    case Value::Type::kArray: {
      if (!key.is_int() && !key.is_bool()) break;
      const auto& items = object.as_array().items;
      int64_t i = key.as_int();
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
      return Value::undefined("list index " + std::to_string(key.as_int()) + " out of range");
    }
    case Value::Type::kString: {
      if (!key.is_int() && !key.is_bool()) break;
      const std::string& s = object.as_string();
      const std::vector<size_t> offs = utf8_offsets(s);
      const auto n = static_cast<int64_t>(offs.size() - 1);
      int64_t i = key.as_int();
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        const auto k = static_cast<size_t>(i);
        return Value(s.substr(offs[k], offs[k + 1] - offs[k]));
      }
      return Value::undefined("string index out of range");
    }
    default:
      break;
  }
  std::string key_repr;  // containers by type only: their repr may be huge
  if (key.is_array() || key.is_object()) {
    key_repr = key.type_name();
  } else {
    py_repr_append(key_repr, key, 1 << 10);
  }
  return Value::undefined(
      fmt::format("'{} object' has no attribute {}", object.type_name(), key_repr));
}

Value get_slice(Interpreter& in, const Value& object, const Value& start, const Value& stop,
                const Value& step) {
  if (object.is_undefined()) fail_undefined(object);
  if (!object.is_string() && !object.is_array()) {
    render_failf("'{}' object is not subscriptable", object.type_name());
  }
  auto as_index = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (!v.is_int() && !v.is_bool()) render_failf("slice {} must be an integer", what);
    return v.as_int();
  };
  const int64_t st = as_index(step, "step").value_or(1);
  if (st == 0) render_fail("slice step cannot be zero");
  std::vector<size_t> offs;
  int64_t n = 0;
  if (object.is_string()) {
    offs = utf8_offsets(object.as_string());
    n = static_cast<int64_t>(offs.size() - 1);
  } else {
    n = static_cast<int64_t>(object.as_array().items.size());
  }
  // Python's slice.indices().
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t i = *v;
    if (i < 0) i = std::max<int64_t>(i + n, st < 0 ? -1 : 0);
    return std::min(i, st < 0 ? n - 1 : n);
  };
  const int64_t b = clamp(as_index(start, "start"), st < 0 ? n - 1 : 0);
  const int64_t e = clamp(as_index(stop, "stop"), st < 0 ? -1 : n);
  std::vector<size_t> picked;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) picked.push_back(static_cast<size_t>(i));
  if (object.is_string()) {
    std::string out;
    const std::string& s = object.as_string();
    for (size_t k : picked) out.append(s, offs[k], offs[k + 1] - offs[k]);
    in.charge(out.size());
    return Value(std::move(out));
  }
  std::vector<Value> out;
  out.reserve(picked.size());
  for (size_t k : picked) out.push_back(object.as_array().items[k]);
  in.charge(out.size() * sizeof(Value));
  return Value::array(std::move(out), object.as_array().is_tuple);
}

std::vector<Value> iterate(Interpreter& in, const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
      return {};
    case Value::Type::kArray:
      in.charge(v.as_array().items.size() * sizeof(Value));
      return v.as_array().items;
    case Value::Type::kObject: {
      std::vector<Value> keys;
      if (v.as_object().is_namespace) break;
      in.charge_items(v.as_object().entries().size());
      for (const auto& [k, item] : v.as_object().entries()) {
        in.charge(k.size());
        keys.emplace_back(k);
      }
      return keys;
    }
    case Value::Type::kString: {
      std::vector<Value> chars;
      const std::string& s = v.as_string();
      in.charge_items(s.size());  // at most one item per byte
      in.charge(s.size());
      for (size_t i = 0; i < s.size();) {
        const size_t len = tok::utf8_char_length(s, i);
        chars.emplace_back(s.substr(i, len));
        i += len;
      }
      return chars;
    }
    default:
      break;
  }
  render_failf("'{}' object is not iterable", v.type_name());
}

std::string percent_format(Interpreter& in, const std::string& fmt,
                           const std::vector<Value>& args) {
  std::string out;
  size_t next_arg = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    size_t j = i + 1;
    std::string spec = "%";
    while (j < fmt.size() &&
           std::string_view("-+ #0123456789.").find(fmt[j]) != std::string_view::npos) {
      spec.push_back(fmt[j++]);
    }
    if (j >= fmt.size()) render_fail("incomplete format");
    const char conv = fmt[j];
    i = j;
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    if (next_arg >= args.size()) render_fail("not enough arguments for format string");
    const Value& arg = args[next_arg++];
    char buf[512];
    if (conv == 's' || conv == 'r') {
      std::string s;
      if (conv == 's') {
        s = str_of(in, arg);
      } else {
        py_repr_append(s, arg, in.limits().max_output_bytes);
      }
      spec += "s";
      if (spec == "%s") {
        out += s;
      } else {
        std::snprintf(buf, sizeof buf, spec.c_str(), s.c_str());
        out += buf;
      }
    } else if (std::string_view("diouxX").find(conv) != std::string_view::npos) {
      if (!arg.is_number()) render_failf("%{} format: a number is required", conv);
      spec += "ll";
      spec.push_back(conv == 'i' || conv == 'u' ? 'd' : conv);
      const long long n = arg.is_float() ? static_cast<long long>(arg.as_float())
                                         : static_cast<long long>(arg.as_int());
      std::snprintf(buf, sizeof buf, spec.c_str(), n);
      out += buf;
    } else if (std::string_view("eEfFgG").find(conv) != std::string_view::npos) {
      if (!arg.is_number()) render_failf("%{} format: a number is required", conv);
      spec.push_back(conv);
      std::snprintf(buf, sizeof buf, spec.c_str(), arg.as_float());
      out += buf;
    } else {
      render_failf("unsupported format character '{}'", conv);
    }
    in.check_size(out.size());
  }
  if (next_arg < args.size()) render_fail("not all arguments converted during string formatting");
  in.charge(out.size());
  return out;
}

}  // namespace tally::jinja
