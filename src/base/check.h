// Invariants: a broken one is a bug in tally, so it stops the process with a message that
// says where and why. Expected failures are Status values (status.h), never checks.
#pragma once

#include <fmt/format.h>

namespace tally::base_detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond, const std::string& msg);
}

#define TALLY_CHECK(cond, ...)                                                          \
  do {                                                                                  \
    if (__builtin_expect(!(cond), 0))                                                   \
      ::tally::base_detail::check_failed(__FILE__, __LINE__, #cond, ::fmt::format(__VA_ARGS__)); \
  } while (0)

#ifdef NDEBUG
#define TALLY_DCHECK(cond, ...) do { (void)sizeof(cond); } while (0)
#else
#define TALLY_DCHECK(cond, ...) TALLY_CHECK(cond, __VA_ARGS__)
#endif
