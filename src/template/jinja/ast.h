// The parsed template: a tree of statements (Node) holding expressions (Expr). One plain
// struct per level with a kind tag keeps the evaluator a pair of switches. The tree is
// immutable after parsing and may be rendered from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "template/jinja/error.h"
#include "template/jinja/value.h"

namespace tally::jinja {

// Deepest expression or statement tree the parser accepts: evaluation recurses over the tree,
// so this bounds the stack a template can use.
inline constexpr uint32_t kMaxTreeHeight = 200;

enum class ExprKind : uint8_t {
  kLiteral,  // literal
  kName,     // name
  kList,     // items (flag: a tuple)
  kDict,     // items: key, value, key, value...
  kGetAttr,  // a.name
  kGetItem,  // a[b]
  kSlice,    // a[b:c:d], any of b c d may be null
  kCall,     // a(args)
  kFilter,   // a | name(args); a is null inside {% filter %}
  kTest,     // a is [not] name(args) (flag: negated)
  kUnary,    // op a: "not", "-", "+"
  kBinary,   // a op b: + - * / // % ** ~
  kCompare,  // a (op rhs)*: == != < > <= >= in "not in"
  kAnd,      // a and b
  kOr,       // a or b
  kCond,     // b if a else c (c may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Arg {
  std::string name;  // empty: positional
  ExprPtr value;
};

struct Expr {
  ExprKind kind = ExprKind::kLiteral;
  SourcePos pos;
  uint32_t height = 1;
  Value literal;
  std::string name;  // kName, kGetAttr, kFilter, kTest; the operator for kUnary/kBinary
  ExprPtr a, b, c, d;
  std::vector<ExprPtr> items;
  std::vector<Arg> args;
  std::vector<std::pair<std::string, ExprPtr>> compares;
  bool flag = false;
};

enum class NodeKind : uint8_t {
  kText,      // text
  kOutput,    // {{ expr }}
  kIf,        // branches (cond, body)..., else_body
  kFor,       // for targets in expr [if filter]: body, else_body
  kSet,       // set targets = expr, or set targets[0].attr = expr
  kSetBlock,  // set targets[0]: body
  kMacro,     // macro name(params): body
  kBreak,
  kContinue,
  kFilterBlock,  // filter filters: body
  kScopeBlock,   // transformers' {% generation %}: just body
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  NodeKind kind = NodeKind::kText;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  std::string attr;                                     // kSet on a namespace attribute
  std::string name;                                     // kMacro
  std::vector<std::pair<std::string, ExprPtr>> params;  // kMacro; default may be null
  std::vector<ExprPtr> filters;                         // kFilterBlock
};

}  // namespace tally::jinja
