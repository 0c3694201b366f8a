// What `tally --version` prints: the version, the commit it was built from, and the CPU
// features and kernel paths this machine will use.
#pragma once

#include <string>

namespace tally::cli {

std::string version_text();

}  // namespace tally::cli
