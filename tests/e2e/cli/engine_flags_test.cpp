// `tally serve` and `tally bench throughput` take the engine's flags from one declaration
// (src/engine/engine_flags.cpp): the same help lines, and the same one-line error and exit
// status 2 for the same bad value. Every case fails before a model is loaded, so it is fast.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;

const char* const kCommands[] = {"serve", "bench throughput"};

std::string tally(const std::string& command, const std::string& args) {
  return tally_test::tally_binary() + " " + command + " -m " +
         tally_test::shell_quote(tally_test::repo_path("models/stories260K.gguf")) + " " + args;
}

// The help line(s) of `flag`: its own line and the description lines CLI11 wraps below it.
std::string help_entry(const std::string& help, const std::string& flag) {
  std::istringstream in(help);
  std::string line, entry;
  bool inside = false;
  while (std::getline(in, line)) {
    const bool starts_option = line.rfind("  -", 0) == 0;
    if (starts_option) inside = line.find(flag + " ") != std::string::npos;
    if (inside) entry += line + "\n";
  }
  return entry;
}

TEST(EngineFlags, ServeAndBenchThroughputShowTheSameHelp) {
  auto serve = run_command(tally_test::tally_binary() + " serve --help");
  auto bench = run_command(tally_test::tally_binary() + " bench throughput --help");
  ASSERT_EQ(serve.exit_code, 0) << serve.err;
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  for (const char* flag : {"--threads", "--max-batched-tokens", "--max-seqs", "--max-model-len",
                           "--block-size", "--kv-type", "--kv-cache-memory", "--memory-budget",
                           "--scheduler"}) {
    SCOPED_TRACE(flag);
    const std::string entry = help_entry(serve.out, flag);
    EXPECT_FALSE(entry.empty()) << serve.out;
    EXPECT_EQ(entry, help_entry(bench.out, flag));
  }
}

TEST(EngineFlags, BadValuesGiveTheSameErrorInBoth) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--kv-type f8", "tally: --kv-type: unknown kv type 'f8'"},
      {"--kv-cache-memory lots", "tally: --kv-cache-memory: memory size 'lots'"},
      {"--memory-budget 8G", "tally: --memory-budget: memory size '8G'"},
      {"--scheduler fifo", "tally: --scheduler must be continuous or static, got 'fifo'"},
      {"--max-seqs 0", "--max-seqs"},
  };
  for (const auto& [args, needle] : cases) {
    std::string first_err;
    for (const char* command : kCommands) {
      SCOPED_TRACE(std::string(command) + " " + args);
      auto r = run_command(tally(command, args));
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
      EXPECT_TRUE(r.out.empty()) << r.out;
      if (first_err.empty()) first_err = r.err;
      EXPECT_EQ(r.err, first_err);
    }
  }
}

}  // namespace
