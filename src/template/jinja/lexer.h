// Template source -> tokens. Text between tags becomes kText tokens with Jinja2's white-space
// rules already applied: "-" in a tag strips all white space on that side; trim_blocks drops
// the first newline after a block or comment tag; lstrip_blocks drops the spaces and tabs
// between a line start and a block or comment tag; "+" opts a tag out of both. Comments
// vanish, {% raw %} sections become text, "\r\n" and "\r" become "\n", and one trailing
// newline of the source is dropped (Jinja2's keep_trailing_newline=False).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "template/jinja/error.h"

namespace tally::jinja {

enum class TokenKind : uint8_t {
  kText,
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text: the unescaped value
  kInt,
  kFloat,
  kOp,  // text: the operator, e.g. "==", "(", "|"
  kEof,
};

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0.0;
  SourcePos pos;
};

// transformers' settings are the defaults.
struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
  bool keep_trailing_newline = false;
};

// Throws JinjaError(kSyntax) with the position of an unterminated tag, string or comment,
// or a character that starts no token.
std::vector<Token> lex_template(std::string_view source, const LexOptions& options);

}  // namespace tally::jinja
