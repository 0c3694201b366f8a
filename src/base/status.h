// Expected failures as values (bad file, bad request, out of memory): a Status that says
// what went wrong and where, and Result<T> = a T or a failed Status. Invariants use
// TALLY_CHECK (check.h) instead.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace tally {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // a bad value from the user (flag, request field)
  kNotFound,         // a missing file, key, tensor, model name
  kIo,               // the OS refused (open, mmap, write)
  kFormat,           // a file or message that does not follow its format
  kUnsupported,      // well-formed but not handled (architecture, tensor type)
  kOutOfMemory,      // a budget or pool is exhausted
  kOutOfRange,       // a length or index past a limit (context, vocabulary)
  kResourceExhausted,// a queue is full: try later
  kCancelled,
  kInternal,
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return {}; }
  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "format: gguf: tensor 'x' offset 123 past end of file (1000 bytes)"
  std::string to_string() const;

  // Prepends context: Status(...).with_context("loading model.gguf"). The field stays.
  Status with_context(const std::string& ctx) const {
    if (ok()) return *this;
    Status s(code_, ctx + ": " + message_);
    s.field_ = field_;
    return s;
  }

  // The request field at fault, when the error is about one ("prompt", "max_tokens", "top_p",
  // ...; "" when none): a typed part of the error, so a caller maps it to its own names (the
  // server to OpenAI's `param`) and never searches the message for it. The name must have
  // static storage (a literal).
  std::string_view field() const { return field_; }
  Status with_field(std::string_view field) const {
    if (ok()) return *this;
    Status s = *this;
    s.field_ = field;
    return s;
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
  std::string_view field_;
};

template <typename... Args>
Status make_error(ErrorCode code, fmt::format_string<Args...> f, Args&&... args) {
  return Status(code, fmt::format(f, std::forward<Args>(args)...));
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result from an ok Status has no value");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace tally

// Returns early with the Status of a failed expression (Status or Result).
#define TALLY_RETURN_IF_ERROR(expr)                 \
  do {                                              \
    auto&& tally_status_ = (expr);                  \
    if (!tally_status_.ok()) return ::tally::base_detail::status_of(tally_status_); \
  } while (0)

#define TALLY_CONCAT_INNER(a, b) a##b
#define TALLY_CONCAT(a, b) TALLY_CONCAT_INNER(a, b)
// TALLY_ASSIGN_OR_RETURN(auto x, make_x()): binds the value or returns the error.
#define TALLY_ASSIGN_OR_RETURN(lhs, expr) \
  TALLY_ASSIGN_OR_RETURN_IMPL(TALLY_CONCAT(tally_result_, __LINE__), lhs, expr)
#define TALLY_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

namespace tally::base_detail {
inline const Status& status_of(const Status& s) { return s; }
template <typename T>
const Status& status_of(const Result<T>& r) { return r.status(); }
}  // namespace tally::base_detail
