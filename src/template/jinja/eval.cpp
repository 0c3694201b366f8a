// Expression evaluation: Interpreter::eval and its helpers.
#include <memory>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/interpreter.h"
#include "template/jinja/value_ops.h"

namespace tally::jinja {
namespace {

bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "not in") return !contains(b, a);
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (op == "<") return py_less(a, b);
  if (op == ">") return py_less(b, a);
  if (op == "<=") return !py_less(b, a);
  return !py_less(a, b);  // >=
}

Value unary(const std::string& op, const Value& v) {
  if (op == "not") return Value(!v.truthy());
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) {
    render_failf("bad operand type for unary {}: '{}'", op, v.type_name());
  }
  if (op == "+") return v.is_float() ? Value(v.as_float()) : Value(v.as_int());
  if (v.is_float()) return Value(-v.as_float());
  int64_t r = 0;
  if (__builtin_sub_overflow(int64_t{0}, v.as_int(), &r)) render_fail("integer overflow");
  return Value(r);
}

}  // namespace

Value Interpreter::eval(const Expr& e) {
  step();
  switch (e.kind) {
    case ExprKind::kLiteral:
      return e.literal;
    case ExprKind::kName:
      return eval_name(e);
    case ExprKind::kList:
    case ExprKind::kDict:
      return eval_container(e);
    case ExprKind::kGetAttr: {
      const Value obj = eval(*e.a);
      return with_pos(e.pos, [&] { return get_attr(*this, obj, e.name); });
    }
    case ExprKind::kGetItem: {
      const Value obj = eval(*e.a);
      const Value key = eval(*e.b);
      return with_pos(e.pos, [&] { return get_item(obj, key); });
    }
    case ExprKind::kSlice: {
      const Value obj = eval(*e.a);
      const Value start = e.b ? eval(*e.b) : Value();
      const Value stop = e.c ? eval(*e.c) : Value();
      const Value stride = e.d ? eval(*e.d) : Value();
      return with_pos(e.pos, [&] { return get_slice(*this, obj, start, stop, stride); });
    }
    case ExprKind::kCall:
      return eval_call(e);
    case ExprKind::kFilter:
      return eval_filter(e);
    case ExprKind::kTest:
      return eval_test(e);
    case ExprKind::kUnary: {
      const Value v = eval(*e.a);
      return with_pos(e.pos, [&] { return unary(e.name, v); });
    }
    case ExprKind::kBinary: {
      const Value a = eval(*e.a);
      const Value b = eval(*e.b);
      return with_pos(e.pos, [&] { return binary_op(*this, e.name, a, b); });
    }
    case ExprKind::kCompare:
      return eval_compare(e);
    case ExprKind::kAnd: {
      Value a = eval(*e.a);
      return a.truthy() ? eval(*e.b) : a;
    }
    case ExprKind::kOr: {
      Value a = eval(*e.a);
      return a.truthy() ? a : eval(*e.b);
    }
    case ExprKind::kCond:
      if (eval(*e.a).truthy()) return eval(*e.b);
      return e.c ? eval(*e.c) : Value::undefined("the inline if-expression evaluated to false");
  }
  return Value();
}

Value Interpreter::eval_name(const Expr& e) {
  if (const Value* v = scope_->find(e.name)) return *v;
  return Value::undefined("'" + e.name + "' is undefined");
}

Value Interpreter::eval_container(const Expr& e) {
  if (e.kind == ExprKind::kList) {
    std::vector<Value> items;
    items.reserve(e.items.size());
    for (const ExprPtr& item : e.items) items.push_back(eval(*item));
    charge(items.size() * sizeof(Value));
    return with_pos(e.pos, [&] { return Value::array(std::move(items), e.flag); });
  }
  auto obj = std::make_shared<Object>();
  for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
    const Value key = eval(*e.items[i]);
    Value value = eval(*e.items[i + 1]);
    with_pos(e.items[i]->pos, [&] {
      if (!key.is_string()) render_failf("dict keys must be strings, not {}", key.type_name());
      obj->set(key.as_string(), std::move(value));
      return 0;
    });
  }
  charge(obj->size() * sizeof(Value) * 2);
  return Value::object(std::move(obj));
}

CallArgs Interpreter::eval_args(const std::vector<Arg>& args) {
  CallArgs out;
  for (const Arg& arg : args) {
    if (arg.name.empty()) {
      out.positional.push_back(eval(*arg.value));
    } else {
      out.named.emplace_back(arg.name, eval(*arg.value));
    }
  }
  return out;
}

Value Interpreter::eval_call(const Expr& e) {
  // obj.method(...) calls the method directly instead of building a bound function.
  if (e.a->kind == ExprKind::kGetAttr) {
    const Value obj = eval(*e.a->a);
    if (MethodFn fn = find_method(obj, e.a->name)) {
      CallArgs args = eval_args(e.args);
      return with_pos(e.pos, [&] { return fn(*this, obj, args); });
    }
    const Value callee = with_pos(e.a->pos, [&] { return get_attr(*this, obj, e.a->name); });
    CallArgs args = eval_args(e.args);
    return with_pos(e.pos, [&] { return call(callee, args); });
  }
  const Value callee = eval(*e.a);
  CallArgs args = eval_args(e.args);
  return with_pos(e.pos, [&] { return call(callee, args); });
}

Value Interpreter::eval_filter(const Expr& e) {
  const Value operand = eval(*e.a);
  CallArgs args = eval_args(e.args);
  return with_pos(e.pos, [&] { return apply_filter(e.name, operand, args); });
}

Value Interpreter::eval_test(const Expr& e) {
  const Value operand = eval(*e.a);
  CallArgs args = eval_args(e.args);
  const bool r = with_pos(e.pos, [&] { return apply_test(e.name, operand, args); });
  return Value(e.flag ? !r : r);
}

Value Interpreter::eval_compare(const Expr& e) {
  Value left = eval(*e.a);
  for (const auto& comparison : e.compares) {
    const std::string& op = comparison.first;  // not a structured binding: clang 14 cannot
    const Expr& rhs_expr = *comparison.second;  // capture those in the lambda below
    Value right = eval(rhs_expr);
    const bool ok = with_pos(rhs_expr.pos, [&] { return compare(op, left, right); });
    if (!ok) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

}  // namespace tally::jinja
