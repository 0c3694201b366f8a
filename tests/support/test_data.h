// Where tests find their data: the repo (always there) and ../shared (there in a session and
// in CI, absent in a fresh clone elsewhere). Tests of ../shared data skip with a message when
// it is missing, except under CI=true, where a missing ../shared is a failure.
#pragma once

#include <string>

#include <gtest/gtest.h>

namespace tally_test {

std::string source_dir();                 // the repository root
std::string repo_path(const std::string& rel);   // source_dir() + "/" + rel
std::string shared_dir();                 // ../shared beside the repo (may not exist)
bool shared_available();
bool in_ci();                             // CI=true in the environment
std::string read_file(const std::string& path);  // whole file; fails the test if unreadable
std::string temp_dir();                   // a fresh folder for this test process

}  // namespace tally_test

// Skips the current test when ../shared/<rel> is absent (fails instead under CI).
#define TALLY_REQUIRE_SHARED(rel, out_path)                                                   \
  std::string out_path = ::tally_test::shared_dir() + "/" + (rel);                            \
  do {                                                                                        \
    if (!::tally_test::shared_available() || !::tally_test::file_exists(out_path)) {           \
      if (::tally_test::in_ci()) FAIL() << "CI needs ../shared data: " << out_path;            \
      GTEST_SKIP() << "../shared data absent (" << out_path << "): skipped outside CI";        \
    }                                                                                         \
  } while (0)

namespace tally_test {
bool file_exists(const std::string& path);
}
