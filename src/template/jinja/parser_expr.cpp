// Expressions, by Jinja2's precedence (see parser.h).
#include "template/jinja/parser_internal.h"

namespace tally::jinja {

// An expression, or several separated by commas (a tuple without parentheses).
ExprPtr Parser::parse_tuple(bool with_condexpr) {
  const Token& start = peek();
  ExprPtr first = parse_expression(with_condexpr);
  if (!is_op(",")) return first;
  auto t = make(ExprKind::kList, start);
  t->flag = true;
  t->items.push_back(std::move(first));
  while (skip_op(",")) {
    if (peek().kind == TokenKind::kVarEnd || peek().kind == TokenKind::kBlockEnd) break;
    t->items.push_back(parse_expression(with_condexpr));
  }
  return finish(std::move(t));
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  DepthGuard guard(*this, peek());
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  ExprPtr expr = parse_or();
  while (is_name("if")) {
    const Token& at = next();
    auto c = make(ExprKind::kCond, at);
    c->a = parse_or();  // condition
    c->b = std::move(expr);
    if (skip_name("else")) c->c = parse_condexpr();
    expr = finish(std::move(c));
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    auto e = make(ExprKind::kOr, next());
    e->a = std::move(left);
    e->b = parse_and();
    left = finish(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    auto e = make(ExprKind::kAnd, next());
    e->a = std::move(left);
    e->b = parse_not();
    left = finish(std::move(e));
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    DepthGuard guard(*this, peek());
    auto e = make(ExprKind::kUnary, next());
    e->name = "not";
    e->a = parse_not();
    return finish(std::move(e));
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const Token& start = peek();
  ExprPtr left = parse_math1();
  ExprPtr cmp;
  for (;;) {
    std::string op;
    if (peek().kind == TokenKind::kOp &&
        (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">="))) {
      op = next().text;
    } else if (is_name("in")) {
      next();
      op = "in";
    } else if (is_name("not") && is_name("in", 1)) {
      next(), next();
      op = "not in";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(ExprKind::kCompare, start);
      cmp->a = std::move(left);
    }
    cmp->compares.emplace_back(std::move(op), parse_math1());
  }
  return cmp ? finish(std::move(cmp)) : std::move(left);
}

ExprPtr Parser::binary(std::string op, const Token& at, ExprPtr lhs, ExprPtr rhs) {
  auto e = make(ExprKind::kBinary, at);
  e->name = std::move(op);
  e->a = std::move(lhs);
  e->b = std::move(rhs);
  return finish(std::move(e));
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& op = next();
    left = binary(op.text, op, std::move(left), parse_concat());
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (is_op("~")) {
    const Token& op = next();
    left = binary("~", op, std::move(left), parse_math2());
  }
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& op = next();
    left = binary(op.text, op, std::move(left), parse_pow());
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const Token& op = next();
    left = binary("**", op, std::move(left), parse_unary(true));
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    DepthGuard guard(*this, peek());
    auto e = make(ExprKind::kUnary, peek());
    e->name = next().text;
    e->a = parse_unary(false);
    node = finish(std::move(e));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  return with_filter ? parse_filter_chain(std::move(node)) : std::move(node);
}

ExprPtr Parser::parse_primary() {
  const Token& tok = peek();
  switch (tok.kind) {
    case TokenKind::kName: {
      next();
      auto e = make(ExprKind::kLiteral, tok);
      if (tok.text == "true" || tok.text == "True") {
        e->literal = Value(true);
      } else if (tok.text == "false" || tok.text == "False") {
        e->literal = Value(false);
      } else if (tok.text == "none" || tok.text == "None") {
        e->literal = Value::none();
      } else {
        e->kind = ExprKind::kName;
        e->name = tok.text;
      }
      return e;
    }
    case TokenKind::kString: {
      auto e = make(ExprKind::kLiteral, tok);
      std::string s;
      while (peek().kind == TokenKind::kString) s += next().text;  // 'a' 'b' == 'ab'
      e->literal = Value(std::move(s));
      return e;
    }
    case TokenKind::kInt: {
      auto e = make(ExprKind::kLiteral, next());
      e->literal = Value(tok.int_value);
      return e;
    }
    case TokenKind::kFloat: {
      auto e = make(ExprKind::kLiteral, next());
      e->literal = Value(tok.float_value);
      return e;
    }
    case TokenKind::kOp:
      if (tok.text == "(") return parse_paren();
      if (tok.text == "[") return parse_list();
      if (tok.text == "{") return parse_dict();
      break;
    default:
      break;
  }
  fail(tok, fmt::format("unexpected {}", describe(tok)));
}

ExprPtr Parser::parse_paren() {
  DepthGuard guard(*this, peek());
  const Token& open = next();
  if (skip_op(")")) {
    auto t = make(ExprKind::kList, open);
    t->flag = true;
    return t;
  }
  ExprPtr first = parse_expression(true);
  if (skip_op(")")) return first;
  auto t = make(ExprKind::kList, open);
  t->flag = true;
  t->items.push_back(std::move(first));
  while (skip_op(",")) {
    if (is_op(")")) break;
    t->items.push_back(parse_expression(true));
  }
  expect_op(")");
  return finish(std::move(t));
}

ExprPtr Parser::parse_list() {
  DepthGuard guard(*this, peek());
  auto e = make(ExprKind::kList, next());
  while (!is_op("]")) {
    e->items.push_back(parse_expression(true));
    if (!skip_op(",")) break;
  }
  expect_op("]");
  return finish(std::move(e));
}

ExprPtr Parser::parse_dict() {
  DepthGuard guard(*this, peek());
  auto e = make(ExprKind::kDict, next());
  while (!is_op("}")) {
    e->items.push_back(parse_expression(true));
    expect_op(":");
    e->items.push_back(parse_expression(true));
    if (!skip_op(",")) break;
  }
  expect_op("}");
  return finish(std::move(e));
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  for (;;) {
    if (is_op(".")) {
      const Token& dot = next();
      if (peek().kind == TokenKind::kInt) {  // x.0 == x[0]
        auto e = make(ExprKind::kGetItem, dot);
        e->a = std::move(node);
        e->b = make(ExprKind::kLiteral, peek());
        e->b->literal = Value(next().int_value);
        node = finish(std::move(e));
        continue;
      }
      auto e = make(ExprKind::kGetAttr, dot);
      e->a = std::move(node);
      e->name = expect_name();
      node = finish(std::move(e));
    } else if (is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr object) {
  DepthGuard guard(*this, peek());
  const Token& open = next();
  ExprPtr parts[3];
  int n_colons = 0;
  for (;;) {
    if (is_op("]")) break;
    if (is_op(":")) {
      next();
      if (++n_colons > 2) fail(open, "too many ':' in subscript");
      continue;
    }
    if (parts[n_colons]) fail(peek(), "expected ':' or ']'");
    parts[n_colons] = parse_expression(true);
  }
  expect_op("]");
  auto e = make(n_colons == 0 ? ExprKind::kGetItem : ExprKind::kSlice, open);
  e->a = std::move(object);
  if (n_colons == 0 && !parts[0]) fail(open, "empty subscript");
  e->b = std::move(parts[0]);
  e->c = std::move(parts[1]);
  e->d = std::move(parts[2]);
  return finish(std::move(e));
}

void Parser::parse_args(std::vector<Arg>& args) {
  DepthGuard guard(*this, peek());
  expect_op("(");
  while (!is_op(")")) {
    Arg arg;
    if (peek().kind == TokenKind::kName && is_op("=", 1)) {
      arg.name = next().text;
      next();
    } else if (!args.empty() && !args.back().name.empty()) {
      fail(peek(), "positional argument after a keyword argument");
    }
    arg.value = parse_expression(true);
    args.push_back(std::move(arg));
    if (!skip_op(",")) break;
  }
  expect_op(")");
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  auto e = make(ExprKind::kCall, peek());
  e->pos = callee->pos;  // errors point at what is called
  e->a = std::move(callee);
  parse_args(e->args);
  return finish(std::move(e));
}

// "name", "name(args)" or a dotted name; applied to `operand` (null in {% filter %}).
ExprPtr Parser::parse_filter(ExprPtr operand) {
  auto e = make(ExprKind::kFilter, peek());
  e->name = expect_name();
  while (skip_op(".")) e->name += "." + expect_name();
  e->a = std::move(operand);
  if (is_op("(")) parse_args(e->args);
  return finish(std::move(e));
}

ExprPtr Parser::parse_filter_chain(ExprPtr node) {
  for (;;) {
    if (skip_op("|")) {
      node = parse_filter(std::move(node));
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_test(ExprPtr operand) {
  auto e = make(ExprKind::kTest, next());
  e->flag = skip_name("not");
  e->name = expect_name();
  while (skip_op(".")) e->name += "." + expect_name();
  e->a = std::move(operand);
  const Token& tok = peek();
  if (is_op("(")) {
    parse_args(e->args);
  } else if ((tok.kind == TokenKind::kName || tok.kind == TokenKind::kString ||
              tok.kind == TokenKind::kInt || tok.kind == TokenKind::kFloat || is_op("[") ||
              is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if")) {
    // "x is divisibleby 3", "x is equalto 'a'": one argument without parentheses.
    Arg arg;
    arg.value = parse_postfix(parse_primary());
    e->args.push_back(std::move(arg));
  }
  return finish(std::move(e));
}

}  // namespace tally::jinja
