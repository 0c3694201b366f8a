#include "template/jinja/interpreter.h"

#include <memory>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/value_ops.h"

namespace tally::jinja {
namespace {

[[noreturn]] void fail_limit(const std::string& what) {
  throw JinjaError(JinjaError::Kind::kLimit, what);
}

// The loop variable of one iteration: loop.index, loop.first, loop.cycle(...), ...
Value make_loop_object(const std::vector<Value>& items, size_t i) {
  auto loop = std::make_shared<Object>();
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  loop->set("index0", Value(k));
  loop->set("index", Value(k + 1));
  loop->set("revindex0", Value(n - k - 1));
  loop->set("revindex", Value(n - k));
  loop->set("first", Value(i == 0));
  loop->set("last", Value(k + 1 == n));
  loop->set("length", Value(n));
  loop->set("depth", Value(int64_t{1}));
  loop->set("depth0", Value(int64_t{0}));
  if (i > 0) loop->set("previtem", items[i - 1]);
  if (k + 1 < n) loop->set("nextitem", items[i + 1]);
  loop->set("cycle", Value::function("cycle", [i](CallArgs& args) {
              if (args.positional.empty()) render_fail("loop.cycle() needs at least one argument");
              return args.positional[i % args.positional.size()];
            }));
  return Value::object(std::move(loop));
}

}  // namespace

Interpreter::Interpreter(const RenderLimits& limits, Scope& globals)
    : limits_(limits), globals_(globals), scope_(&root_) {
  root_.parent = &globals_;
}

void Interpreter::step() {
  if (++steps_ > limits_.max_steps) {
    fail_limit("template exceeded " + std::to_string(limits_.max_steps) + " steps");
  }
}

void Interpreter::charge(size_t bytes) {
  allocated_ += bytes;
  if (allocated_ > limits_.max_alloc_bytes || bytes > limits_.max_alloc_bytes) {
    fail_limit("template built more than " + std::to_string(limits_.max_alloc_bytes) + " bytes");
  }
}

void Interpreter::charge_items(size_t n) {
  if (n > limits_.max_alloc_bytes / kItemBytes) charge(limits_.max_alloc_bytes + 1);
  charge(n * kItemBytes);
}

void Interpreter::check_size(size_t size) const {
  if (size > limits_.max_output_bytes) {
    fail_limit("string longer than " + std::to_string(limits_.max_output_bytes) + " bytes");
  }
}

void Interpreter::render(const Body& body, std::string& out) {
  out_ = &out;
  exec_body(body);
}

void Interpreter::emit(std::string_view s) {
  check_size(out_->size() + s.size());
  charge(s.size());
  out_->append(s);
}

std::string Interpreter::render_to_string(const Body& body) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Interpreter::Flow Interpreter::exec_body(const Body& body) {
  for (const NodePtr& n : body) {
    const Flow f = exec(*n);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interpreter::Flow Interpreter::exec(const Node& n) {
  step();
  switch (n.kind) {
    case NodeKind::kText:
      emit(n.text);
      return Flow::kNormal;
    case NodeKind::kOutput: {
      const Value v = eval(*n.expr);
      if (v.is_string()) {
        emit(v.as_string());
      } else {
        emit(str_of(*this, v));
      }
      return Flow::kNormal;
    }
    case NodeKind::kIf:
      for (const auto& [cond, body] : n.branches) {
        if (eval(*cond).truthy()) return exec_body(body);
      }
      return exec_body(n.else_body);
    case NodeKind::kFor:
      return exec_for(n);
    case NodeKind::kSet:
      exec_set(n);
      return Flow::kNormal;
    case NodeKind::kSetBlock: {
      Value v(render_to_string(n.body));
      scope_->vars[n.targets[0]] = std::move(v);
      return Flow::kNormal;
    }
    case NodeKind::kMacro:
      exec_macro(n);
      return Flow::kNormal;
    case NodeKind::kBreak:
      return Flow::kBreak;
    case NodeKind::kContinue:
      return Flow::kContinue;
    case NodeKind::kFilterBlock: {
      Value v(render_to_string(n.body));
      for (const ExprPtr& f : n.filters) {
        CallArgs args = eval_args(f->args);
        v = with_pos(f->pos, [&] { return apply_filter(f->name, v, args); });
      }
      emit(str_of(*this, v));
      return Flow::kNormal;
    }
    case NodeKind::kScopeBlock:
      return exec_body(n.body);
  }
  return Flow::kNormal;
}

void Interpreter::assign(const std::vector<std::string>& targets, const Value& value,
                         const Node& at) {
  if (targets.size() == 1) {
    scope_->vars[targets[0]] = value;
    return;
  }
  with_pos(at.pos, [&] {
    std::vector<Value> items = iterate(*this, value);
    if (items.size() != targets.size()) {
      render_failf("cannot unpack {} values into {} names", std::to_string(items.size()),
                   std::to_string(targets.size()));
    }
    for (size_t i = 0; i < targets.size(); ++i) scope_->vars[targets[i]] = std::move(items[i]);
    return 0;
  });
}

Interpreter::Flow Interpreter::exec_for(const Node& n) {
  const Value iterable = eval(*n.expr);
  std::vector<Value> items = with_pos(n.expr->pos, [&] { return iterate(*this, iterable); });
  Scope* outer = scope_;
  if (n.filter) {  // the "if" of the loop runs before loop.* exists: it decides loop.length
    std::vector<Value> kept;
    for (Value& item : items) {
      step();
      Scope s;
      s.parent = outer;
      scope_ = &s;
      try {
        assign(n.targets, item, n);
        if (eval(*n.filter).truthy()) kept.push_back(std::move(item));
      } catch (...) {
        scope_ = outer;
        throw;
      }
      scope_ = outer;
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(n.else_body);
  for (size_t i = 0; i < items.size(); ++i) {
    step();
    Scope s;  // a fresh scope per iteration, as Jinja2
    s.parent = outer;
    scope_ = &s;
    Flow f = Flow::kNormal;
    try {
      s.vars["loop"] = make_loop_object(items, i);
      assign(n.targets, items[i], n);
      f = exec_body(n.body);
    } catch (...) {
      scope_ = outer;
      throw;
    }
    scope_ = outer;
    if (f == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Interpreter::exec_set(const Node& n) {
  Value v = eval(*n.expr);
  if (n.attr.empty()) {
    assign(n.targets, v, n);
    return;
  }
  const Value* target = scope_->find(n.targets[0]);
  with_pos(n.pos, [&] {
    if (target == nullptr || !target->is_object() || !target->as_object().is_namespace) {
      render_failf("cannot assign attribute '{}' on '{}': not a namespace()", n.attr, n.targets[0]);
    }
    if (v.has_namespace()) render_fail("a namespace cannot hold a namespace");
    target->object_ptr()->set(n.attr, std::move(v));
    return 0;
  });
}

void Interpreter::exec_macro(const Node& n) {
  const Node* macro = &n;
  scope_->vars[n.name] =
      Value::function(n.name, [this, macro](CallArgs& args) { return call_macro(*macro, args); });
}

Value Interpreter::call_macro(const Node& macro, CallArgs& args) {
  if (call_depth_ >= limits_.max_call_depth) {
    fail_limit("macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
  }
  if (args.positional.size() > macro.params.size()) {
    render_failf("macro '{}' takes {} arguments ({} given)", macro.name,
                 std::to_string(macro.params.size()), std::to_string(args.positional.size()));
  }
  Scope s;  // macros see the template's top level, not the caller's locals
  s.parent = &root_;
  Scope* saved = scope_;
  scope_ = &s;
  ++call_depth_;
  std::string result;
  try {
    for (const auto& [name, value] : args.named) {
      bool known = false;
      for (const auto& [param, def] : macro.params) known = known || param == name;
      if (!known) render_failf("macro '{}' has no parameter '{}'", macro.name, name);
    }
    for (size_t i = 0; i < macro.params.size(); ++i) {
      const auto& [param, def] = macro.params[i];
      const Value* named = nullptr;
      for (const auto& [name, value] : args.named) {
        if (name == param) named = &value;
      }
      if (i < args.positional.size()) {
        s.vars[param] = args.positional[i];
      } else if (named != nullptr) {
        s.vars[param] = *named;
      } else {
        s.vars[param] = def ? eval(*def) : Value::undefined("'" + param + "' is undefined");
      }
    }
    result = render_to_string(macro.body);
  } catch (...) {
    scope_ = saved;
    --call_depth_;
    throw;
  }
  scope_ = saved;
  --call_depth_;
  return Value(std::move(result));
}

Value Interpreter::apply_filter(std::string_view name, Value operand, CallArgs& args) {
  FilterFn fn = find_filter(name);
  if (fn == nullptr) render_failf("no filter named '{}'", name);
  return fn(*this, operand, args);
}

bool Interpreter::apply_test(std::string_view name, const Value& operand, CallArgs& args) {
  TestFn fn = find_test(name);
  if (fn == nullptr) render_failf("no test named '{}'", name);
  return fn(*this, operand, args);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (!callee.is_function()) {
    render_failf("'{}' object is not callable", callee.type_name());
  }
  return callee.as_function().call(args);
}

}  // namespace tally::jinja
