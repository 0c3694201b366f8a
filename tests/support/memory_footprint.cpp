#include "support/memory_footprint.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "metrics/process_memory.h"
#include "support/run_command.h"
#include "support/test_data.h"

namespace tally_test {

std::string footprint_model(const std::string& vocab_path) {
  const std::string path = temp_dir() + "/stories110M-q4_0.gguf";
  if (file_exists(path)) return path;
  const CommandResult r = run_command(tally_binary() +
                                      " convert --synthetic stories110M --type q4_0 --threads 2 "
                                      "--vocab-from " +
                                      shell_quote(vocab_path) + " -o " + shell_quote(path));
  if (r.exit_code != 0) {
    ADD_FAILURE() << "tally convert failed: " << r.err;
    return "";
  }
  return path;
}

int64_t tally_binary_bytes() {
  return static_cast<int64_t>(std::filesystem::file_size(tally_binary()));
}

MeasuredRun run_tally_measured(const std::vector<std::string>& args) {
  static int counter = 0;
  const std::string base = temp_dir() + "/measured" + std::to_string(counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  std::vector<std::string> argv = {tally_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  MeasuredRun run;
  const pid_t pid = spawn_process(argv, out_path, err_path);
  if (pid < 0) return run;
  // The child's VmHWM, read while it runs. Not wait4's ru_maxrss: posix_spawn starts the child
  // in this process's memory (vfork), and exec carries that peak over into the child's maxrss,
  // so a test process that once held a big engine would see its own peak.
  int status = 0;
  for (;;) {
    if (auto m = tally::metrics::read_process_memory(pid); m.ok())
      run.peak_resident_bytes = std::max(run.peak_resident_bytes, m->peak_resident_bytes);
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) {
      ADD_FAILURE() << "waitpid failed";
      return run;
    }
    usleep(2000);
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.out = read_file(out_path);
  run.err = read_file(err_path);
  return run;
}

::testing::AssertionResult within_five_percent(int64_t actual, int64_t expected) {
  const double mib = 1024.0 * 1024.0;
  const double off = static_cast<double>(actual - expected) / static_cast<double>(expected);
  const std::string figures = "resident " + std::to_string(actual / mib) + " MiB, expected " +
                              std::to_string(expected / mib) + " MiB (" +
                              std::to_string(off * 100) + "%)";
  if (off <= 0.05 && off >= -0.05) return ::testing::AssertionSuccess() << figures;
  return ::testing::AssertionFailure() << figures;
}

}  // namespace tally_test
