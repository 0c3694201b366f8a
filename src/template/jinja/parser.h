// Tokens -> statement tree, by recursive descent with Jinja2's operator precedence (lowest
// first): "x if c else y", or, and, not, comparisons and "in", + -, ~, * / // %, **, unary
// - +, then postfix .attr [index] (call), | filter, "is" test. Throws JinjaError(kSyntax) at
// the first error, with its position.
#pragma once

#include <vector>

#include "template/jinja/ast.h"
#include "template/jinja/lexer.h"

namespace tally::jinja {

Body parse_template(const std::vector<Token>& tokens);

}  // namespace tally::jinja
