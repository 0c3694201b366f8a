// Renders a parsed template: walks the statement tree, evaluates expressions over Values and
// appends to the output. One Interpreter serves one render on one thread; it counts every
// step and every byte it builds against RenderLimits, so a hostile template ends with a
// kLimit error instead of hanging or exhausting memory. Bytes are charged before they are
// allocated (from the sizes about to be built), so the limit fires before the memory is taken.
//
// Scoping follows Jinja2: each for-loop iteration and each macro call gets a fresh scope (a
// `set` inside them is not seen outside; namespace() objects carry values out), `if` does
// not open a scope.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <unordered_map>

#include "template/jinja/ast.h"
#include "template/jinja/value.h"

namespace tally::jinja {

struct RenderLimits {
  uint64_t max_steps = 10'000'000;      // expression evaluations + statements + iterations
  size_t max_output_bytes = 32u << 20;  // the output, and any one string built on the way
  size_t max_alloc_bytes = 512u << 20;  // all strings and lists built, summed
  uint32_t max_call_depth = 32;         // nested macro calls (recursion)
};

struct Scope {
  Scope* parent = nullptr;
  std::unordered_map<std::string, Value> vars;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

class Interpreter {
 public:
  // `globals` (variables and functions of the render) must outlive the interpreter.
  Interpreter(const RenderLimits& limits, Scope& globals);

  // Renders `body` into `out` (appends). Throws JinjaError.
  void render(const Body& body, std::string& out);

  Value eval(const Expr& e);

  // Budget: one step of work; `bytes` more built; a string about to reach `size` bytes.
  void step();
  void charge(size_t bytes);
  // Charges a list of n items about to be built: each a Value and, at worst, a string of its
  // own (shared std::string and its control block), besides the string bytes charged apart.
  void charge_items(size_t n);
  static constexpr size_t kItemBytes = sizeof(Value) + sizeof(std::string) + 32;
  void check_size(size_t size) const;

  // Calls a filter or test by name (used by map/select/selectattr).
  Value apply_filter(std::string_view name, Value operand, CallArgs& args);
  bool apply_test(std::string_view name, const Value& operand, CallArgs& args);

  // Calls any callable value (errors for non-callables).
  Value call(const Value& callee, CallArgs& args);

  const RenderLimits& limits() const { return limits_; }

 private:
  enum class Flow : uint8_t { kNormal, kBreak, kContinue };

  Flow exec_body(const Body& body);
  Flow exec(const Node& n);
  Flow exec_for(const Node& n);
  void exec_set(const Node& n);
  void exec_macro(const Node& n);
  std::string render_to_string(const Body& body);
  void emit(std::string_view s);
  void assign(const std::vector<std::string>& targets, const Value& value, const Node& at);

  Value eval_name(const Expr& e);
  Value eval_call(const Expr& e);
  Value eval_filter(const Expr& e);
  Value eval_test(const Expr& e);
  Value eval_compare(const Expr& e);
  Value eval_container(const Expr& e);
  CallArgs eval_args(const std::vector<Arg>& args);
  Value call_macro(const Node& macro, CallArgs& args);

  const RenderLimits& limits_;
  Scope& globals_;
  Scope root_;    // template-level variables (child of globals_)
  Scope* scope_;  // innermost scope
  std::string* out_ = nullptr;
  uint64_t steps_ = 0;
  size_t allocated_ = 0;
  uint32_t call_depth_ = 0;
};

}  // namespace tally::jinja
