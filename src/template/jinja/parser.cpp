#include "template/jinja/parser.h"

#include "template/jinja/parser_internal.h"

namespace tally::jinja {

Body Parser::run() {
  Body body = parse_body({});
  if (peek().kind != TokenKind::kEof) {
    // parse_body stopped at an end tag nobody opened.
    fail(peek(), fmt::format("unexpected '{}'", peek().text));
  }
  return body;
}

// Parses until end of input or a block tag whose name is in `stops` (left unconsumed, just
// after its '{%').
Body Parser::parse_body(std::initializer_list<std::string_view> stops) {
  DepthGuard guard(*this, peek());
  Body body;
  for (;;) {
    const Token& tok = peek();
    if (tok.kind == TokenKind::kEof) return body;
    if (tok.kind == TokenKind::kText) {
      auto n = std::make_unique<Node>();
      n->kind = NodeKind::kText;
      n->pos = tok.pos;
      n->text = tok.text;
      body.push_back(std::move(n));
      next();
    } else if (tok.kind == TokenKind::kVarBegin) {
      next();
      auto n = std::make_unique<Node>();
      n->kind = NodeKind::kOutput;
      n->pos = tok.pos;
      n->expr = parse_tuple(true);
      if (peek().kind != TokenKind::kVarEnd) {
        fail(peek(), fmt::format("expected '}}}}', got {}", describe(peek())));
      }
      next();
      body.push_back(std::move(n));
    } else if (tok.kind == TokenKind::kBlockBegin) {
      next();
      const Token& name = peek();
      if (name.kind != TokenKind::kName) fail(name, "expected a tag name");
      if (std::find(stops.begin(), stops.end(), name.text) != stops.end()) return body;
      if (is_end_tag(name.text)) return body;  // run() or the caller reports it
      body.push_back(parse_statement());
    } else {
      fail(tok, fmt::format("unexpected {}", describe(tok)));
    }
  }
}

bool Parser::is_end_tag(std::string_view name) {
  return name == "endif" || name == "elif" || name == "else" || name == "endfor" ||
         name == "endmacro" || name == "endset" || name == "endfilter" || name == "endgeneration";
}

// After a parse_body: the current token must be the end tag `name`.
void Parser::expect_end(const Token& opener, std::string_view name) {
  if (peek().kind == TokenKind::kEof) {
    fail(opener, fmt::format("'{}' is never closed: expected '{}'", opener.text, name));
  }
  if (!is_name(name)) {
    fail(peek(), fmt::format("expected '{}', got {}", name, describe(peek())));
  }
  next();
  expect_block_end();
}

NodePtr Parser::parse_statement() {
  const Token& tag = peek();
  const std::string& kw = tag.text;
  if (kw == "if") return parse_if();
  if (kw == "for") return parse_for();
  if (kw == "set") return parse_set();
  if (kw == "macro") return parse_macro();
  if (kw == "filter") return parse_filter_block();
  if (kw == "generation") return parse_scope_block("endgeneration");
  if (kw == "break" || kw == "continue") {
    if (loop_depth_ == 0) fail(tag, fmt::format("'{}' outside of a loop", kw));
    auto n = std::make_unique<Node>();
    n->kind = kw == "break" ? NodeKind::kBreak : NodeKind::kContinue;
    n->pos = tag.pos;
    next();
    expect_block_end();
    return n;
  }
  fail(tag, fmt::format("unknown or unsupported tag '{}'", kw));
}

NodePtr Parser::parse_if() {
  const Token& opener = next();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kIf;
  n->pos = opener.pos;
  ExprPtr cond = parse_tuple(true);
  expect_block_end();
  for (;;) {
    Body body = parse_body({"elif", "else", "endif"});
    n->branches.emplace_back(std::move(cond), std::move(body));
    if (skip_name("elif")) {
      cond = parse_tuple(true);
      expect_block_end();
      continue;
    }
    if (skip_name("else")) {
      expect_block_end();
      n->else_body = parse_body({"endif"});
    }
    expect_end(opener, "endif");
    return n;
  }
}

std::vector<std::string> Parser::parse_targets() {
  std::vector<std::string> names;
  const bool paren = skip_op("(");
  do {
    names.push_back(expect_name());
  } while (skip_op(","));
  if (paren) expect_op(")");
  return names;
}

NodePtr Parser::parse_for() {
  const Token& opener = next();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kFor;
  n->pos = opener.pos;
  n->targets = parse_targets();
  if (!skip_name("in")) fail(peek(), fmt::format("expected 'in', got {}", describe(peek())));
  n->expr = parse_tuple(false);  // no "x if c": a trailing "if" filters the loop
  if (skip_name("if")) n->filter = parse_expression(true);
  if (is_name("recursive")) fail(peek(), "recursive loops are not supported");
  expect_block_end();
  ++loop_depth_;
  n->body = parse_body({"else", "endfor"});
  --loop_depth_;
  if (skip_name("else")) {
    expect_block_end();
    n->else_body = parse_body({"endfor"});
  }
  expect_end(opener, "endfor");
  return n;
}

NodePtr Parser::parse_set() {
  const Token& opener = next();
  auto n = std::make_unique<Node>();
  n->pos = opener.pos;
  n->targets.push_back(expect_name());
  if (skip_op(".")) {
    n->attr = expect_name();
  } else {
    while (skip_op(",")) n->targets.push_back(expect_name());
  }
  if (skip_op("=")) {
    n->kind = NodeKind::kSet;
    n->expr = parse_tuple(true);
    expect_block_end();
    return n;
  }
  if (n->targets.size() != 1 || !n->attr.empty()) fail(peek(), "expected '='");
  n->kind = NodeKind::kSetBlock;
  expect_block_end();
  const int saved = loop_depth_;
  loop_depth_ = 0;
  n->body = parse_body({"endset"});
  loop_depth_ = saved;
  expect_end(opener, "endset");
  return n;
}

NodePtr Parser::parse_macro() {
  const Token& opener = next();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kMacro;
  n->pos = opener.pos;
  n->name = expect_name();
  expect_op("(");
  while (!is_op(")")) {
    std::string param = expect_name();
    ExprPtr def;
    if (skip_op("=")) def = parse_expression(true);
    n->params.emplace_back(std::move(param), std::move(def));
    if (!skip_op(",")) break;
  }
  expect_op(")");
  expect_block_end();
  const int saved = loop_depth_;
  loop_depth_ = 0;
  n->body = parse_body({"endmacro"});
  loop_depth_ = saved;
  expect_end(opener, "endmacro");
  return n;
}

NodePtr Parser::parse_filter_block() {
  const Token& opener = next();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kFilterBlock;
  n->pos = opener.pos;
  do {
    n->filters.push_back(parse_filter(nullptr));
  } while (skip_op("|"));
  expect_block_end();
  n->body = parse_body({"endfilter"});
  expect_end(opener, "endfilter");
  return n;
}

NodePtr Parser::parse_scope_block(std::string_view end) {
  const Token& opener = next();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::kScopeBlock;
  n->pos = opener.pos;
  expect_block_end();
  n->body = parse_body({end});
  expect_end(opener, end);
  return n;
}

Body parse_template(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace tally::jinja
