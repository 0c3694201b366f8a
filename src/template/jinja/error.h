// Errors inside the Jinja interpreter. The lexer, parser and evaluator throw JinjaError (deep
// recursion makes early returns noisy); the public entry points in template.cpp catch it and
// return a Status, so no exception ever leaves the library.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <exception>
#include <string>
#include <utility>

namespace tally::jinja {

// 1-based line and column (in bytes) of a place in the template source; 0 = unknown.
struct SourcePos {
  uint32_t line = 0;
  uint32_t col = 0;
};

class JinjaError : public std::exception {
 public:
  enum class Kind : uint8_t {
    kSyntax,  // the template does not parse
    kRender,  // a type error, an undefined value, a bad call while rendering
    kRaised,  // the template called raise_exception(msg)
    kLimit,   // a render limit (steps, output size, memory, depth) was reached
  };
  JinjaError(Kind kind, std::string message, SourcePos pos = {})
      : kind_(kind), message_(std::move(message)), pos_(pos) {}

  Kind kind() const { return kind_; }
  const std::string& message() const { return message_; }
  SourcePos pos() const { return pos_; }
  bool has_pos() const { return pos_.line != 0; }
  void set_pos(SourcePos pos) { pos_ = pos; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  Kind kind_;
  std::string message_;
  SourcePos pos_;
};

// A render-time error at no particular place (the evaluator adds the position of the call or
// filter that failed).
[[noreturn]] inline void render_fail(std::string message) {
  throw JinjaError(JinjaError::Kind::kRender, std::move(message));
}

template <typename... Args>
[[noreturn]] void render_failf(fmt::format_string<Args...> format, Args&&... args) {
  render_fail(fmt::format(format, std::forward<Args>(args)...));
}

// Runs f(); an error without a position gets `pos` (the call or filter that failed).
template <typename F>
auto with_pos(SourcePos pos, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (JinjaError& e) {
    if (!e.has_pos()) e.set_pos(pos);
    throw;
  }
}

}  // namespace tally::jinja
