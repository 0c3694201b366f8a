#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace tally::base_detail {

void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "tally: internal error at %s:%d: check '%s' failed: %s\n", file, line, cond,
               msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace tally::base_detail
