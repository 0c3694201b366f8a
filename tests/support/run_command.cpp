#include "support/run_command.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "support/test_data.h"

namespace tally_test {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

std::string tally_binary() { return std::string(TALLY_BINARY_DIR) + "/tally"; }

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CommandResult run_command(const std::string& command_line) {
  static int counter = 0;
  const std::string base = temp_dir() + "/cmd" + std::to_string(counter++);
  // Braces, so a redirection inside command_line (cmd < file) wins over the outer </dev/null.
  const std::string full =
      "{ " + command_line + "\n} >" + base + ".out 2>" + base + ".err </dev/null";
  CommandResult r;
  int status = std::system(full.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  return r;
}

}  // namespace tally_test
