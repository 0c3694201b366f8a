// A Jinja2 template as transformers renders chat templates: parse once, render many times
// (from many threads: a Template is immutable and cheap to copy).
//
// The supported subset (docs/chat_templates.md lists it): {{ }}, {% %}, {# #}, white-space
// control, if/elif/else, for (loop.*, else, inline if filter), set (names, tuples,
// namespace attributes, blocks), macro, filter blocks, break/continue, raw, generation;
// Jinja2's operators, filters and tests that chat templates use; str/dict/list methods;
// range, namespace, dict, raise_exception, strftime_now. Anything else is a parse or render
// error with the line and column, never a crash.
#pragma once

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "template/jinja/interpreter.h"
#include "template/jinja/lexer.h"
#include "template/jinja/value.h"

namespace tally::jinja {

struct TemplateOptions {
  LexOptions lex;                      // transformers: trim_blocks, lstrip_blocks
  size_t max_source_bytes = 1u << 20;  // larger sources are refused
};

struct RenderOptions {
  RenderLimits limits;
  std::optional<std::time_t> now;  // the clock of strftime_now(); nullopt = the real time
};

class Template {
 public:
  // kFormat with "line:column" when the source does not parse.
  static Result<Template> parse(std::string_view source, const TemplateOptions& options = {});

  // Renders with `variables` (a dict; raise_exception, range, ... are added). Errors:
  // kInvalidArgument for a render error or raise_exception (the message says which, with
  // the line and column), kOutOfRange when a limit of `options.limits` is reached.
  Result<std::string> render(const Object& variables, const RenderOptions& options = {}) const;

 private:
  Template() = default;
  std::shared_ptr<const Body> body_;
};

}  // namespace tally::jinja
