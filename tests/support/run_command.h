// Runs a command line through /bin/sh and captures stdout, stderr and the exit status: the
// tests drive the real `tally` binary the way a user does.
#pragma once

#include <string>
#include <vector>

namespace tally_test {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

CommandResult run_command(const std::string& command_line);
// Path of the built `tally` binary.
std::string tally_binary();
// Single-quotes a string for the shell.
std::string shell_quote(const std::string& s);

// Starts argv[0] with argv (no shell), stdin from /dev/null, stdout and stderr into files
// (created or truncated; "/dev/null" discards). The child's pid, or -1 (a test failure).
int spawn_process(std::vector<std::string> argv, const std::string& out_path,
                  const std::string& err_path);

}  // namespace tally_test
