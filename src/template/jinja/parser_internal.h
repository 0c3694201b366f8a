// The recursive-descent parser behind parse_template(): token helpers here, statements in
// parser.cpp, expressions in parser_expr.cpp.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "template/jinja/ast.h"
#include "template/jinja/lexer.h"

namespace tally::jinja {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Body run();

 private:
  // ---- token helpers ----
  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& next() {
    const Token& tok = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return tok;
  }
  bool is_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kOp && peek(ahead).text == op;
  }
  bool is_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::kName && peek(ahead).text == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }

  [[noreturn]] static void fail(const Token& at, std::string message) {
    throw JinjaError(JinjaError::Kind::kSyntax, std::move(message), at.pos);
  }

  static std::string describe(const Token& tok) {
    switch (tok.kind) {
      case TokenKind::kEof:
        return "end of template";
      case TokenKind::kText:
        return "text";
      case TokenKind::kVarEnd:
        return "'}}'";
      case TokenKind::kBlockEnd:
        return "'%}'";
      case TokenKind::kVarBegin:
        return "'{{'";
      case TokenKind::kBlockBegin:
        return "'{%'";
      case TokenKind::kString:
        return "string literal";
      default:
        return "'" + tok.text + "'";
    }
  }

  void expect_op(std::string_view op) {
    if (!skip_op(op)) fail(peek(), fmt::format("expected '{}', got {}", op, describe(peek())));
  }
  void expect_block_end() {
    if (peek().kind != TokenKind::kBlockEnd)
      fail(peek(), fmt::format("expected '%}}', got {}", describe(peek())));
    next();
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::kName)
      fail(peek(), fmt::format("expected a name, got {}", describe(peek())));
    return next().text;
  }

  // Counts nesting so that deep templates fail to parse instead of exhausting the stack.
  struct DepthGuard {
    DepthGuard(Parser& p, const Token& at) : p_(p) {
      if (++p_.depth_ > kMaxTreeHeight / 2) fail(at, "template nested too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  ExprPtr make(ExprKind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->pos = at.pos;
    return e;
  }

  // Sets the height of a finished node from its children and enforces kMaxTreeHeight.
  ExprPtr finish(ExprPtr e) {
    uint32_t h = 0;
    auto take = [&h](const ExprPtr& c) {
      if (c) h = std::max(h, c->height);
    };
    take(e->a), take(e->b), take(e->c), take(e->d);
    for (const auto& it : e->items) take(it);
    for (const auto& arg : e->args) take(arg.value);
    for (const auto& [op, rhs] : e->compares) take(rhs);
    e->height = h + 1;
    if (e->height > kMaxTreeHeight) {
      throw JinjaError(JinjaError::Kind::kSyntax, "expression nested too deeply", e->pos);
    }
    return e;
  }

  // Parses until end of input or a block tag whose name is in `stops` (left unconsumed, just
  // after its '{%').
  Body parse_body(std::initializer_list<std::string_view> stops);
  static bool is_end_tag(std::string_view name);
  // After a parse_body: the current token must be the end tag `name`.
  void expect_end(const Token& opener, std::string_view name);
  NodePtr parse_statement();
  NodePtr parse_if();
  std::vector<std::string> parse_targets();
  NodePtr parse_for();
  NodePtr parse_set();
  NodePtr parse_macro();
  NodePtr parse_filter_block();
  NodePtr parse_scope_block(std::string_view end);

  // An expression, or several separated by commas (a tuple without parentheses).
  ExprPtr parse_tuple(bool with_condexpr);
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr binary(std::string op, const Token& at, ExprPtr lhs, ExprPtr rhs);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_paren();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr object);
  void parse_args(std::vector<Arg>& args);
  ExprPtr parse_call(ExprPtr callee);
  // "name", "name(args)" or a dotted name; applied to `operand` (null in {% filter %}).
  ExprPtr parse_filter(ExprPtr operand);
  ExprPtr parse_filter_chain(ExprPtr node);
  ExprPtr parse_test(ExprPtr operand);

  const std::vector<Token>& t_;
  size_t i_ = 0;
  uint32_t depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace tally::jinja
