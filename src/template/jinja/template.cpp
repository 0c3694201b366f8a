#include "template/jinja/template.h"

#include <new>
#include <stdexcept>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/parser.h"

namespace tally::jinja {
namespace {

std::string where(const JinjaError& e) {
  if (!e.has_pos()) return "";
  return " at " + std::to_string(e.pos().line) + ":" + std::to_string(e.pos().col);
}

Status to_status(const JinjaError& e) {
  switch (e.kind()) {
    case JinjaError::Kind::kSyntax:
      return Status(ErrorCode::kFormat, "template syntax error" + where(e) + ": " + e.message());
    case JinjaError::Kind::kRaised:
      return Status(ErrorCode::kInvalidArgument,
                    "template raised an exception" + where(e) + ": " + e.message());
    case JinjaError::Kind::kLimit:
      return Status(ErrorCode::kOutOfRange,
                    "template limit reached" + where(e) + ": " + e.message());
    case JinjaError::Kind::kRender:
      break;
  }
  return Status(ErrorCode::kInvalidArgument,
                "template render error" + where(e) + ": " + e.message());
}

}  // namespace

Result<Template> Template::parse(std::string_view source, const TemplateOptions& options) {
  if (source.size() > options.max_source_bytes) {
    return make_error(ErrorCode::kOutOfRange, "template of {} bytes exceeds the {} byte limit",
                      source.size(), options.max_source_bytes);
  }
  try {
    const std::vector<Token> tokens = lex_template(source, options.lex);
    Template t;
    t.body_ = std::make_shared<const Body>(parse_template(tokens));
    return t;
  } catch (const JinjaError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kOutOfMemory, "out of memory parsing a template");
  } catch (const std::exception& e) {  // a bug, but never one that takes the server down
    return make_error(ErrorCode::kInternal, "parsing a template: {}", e.what());
  }
}

Result<std::string> Template::render(const Object& variables, const RenderOptions& options) const {
  try {
    Scope globals;
    Interpreter interp(options.limits, globals);
    GlobalsConfig config;
    config.now = options.now;
    install_globals(globals, interp, config);
    for (const auto& [name, value] : variables.entries()) globals.vars[name] = value;
    std::string out;
    interp.render(*body_, out);
    return out;
  } catch (const JinjaError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kOutOfMemory, "out of memory rendering a template");
  } catch (const std::length_error&) {
    return Status(ErrorCode::kOutOfRange, "a string or list grew too long rendering a template");
  } catch (const std::exception& e) {  // a bug, but never one that takes the server down
    return make_error(ErrorCode::kInternal, "rendering a template: {}", e.what());
  }
}

}  // namespace tally::jinja
