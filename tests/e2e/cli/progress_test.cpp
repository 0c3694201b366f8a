// Long operations draw a progress bar on stderr only when it is a terminal: through a pseudo
// terminal (script(1)) the model load and a conversion show one, and tally bench a line per
// finished measurement; redirected, stderr holds nothing of it.
#include <string>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

// Runs `args` with stdout and stderr on a pseudo terminal; returns what the terminal got.
std::string on_terminal(const std::string& args) {
  auto r = run_command("script -qec " + shell_quote(tally_test::tally_binary() + " " + args) + " /dev/null");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return r.out;
}

TEST(Progress, ModelLoadShowsABarOnATerminalOnly) {
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "script(1) is not installed";
  const std::string tty = on_terminal("generate --temp 0 -n 4 -p hi");
  EXPECT_NE(tty.find("loading stories260K.gguf ["), std::string::npos) << tty;
  EXPECT_NE(tty.find("100% 5/5"), std::string::npos) << tty;  // one step per layer
  EXPECT_NE(tty.find("\r\033[K"), std::string::npos) << tty;  // and erased when done

  auto piped = run_command(tally_test::tally_binary() + " generate --temp 0 -n 4 -p hi");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("loading"), std::string::npos) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
}

TEST(Progress, ConversionShowsABarOnATerminalOnly) {
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "script(1) is not installed";
  const std::string vocab = tally_test::repo_path("models/stories260K.gguf");
  const std::string out = tally_test::temp_dir() + "/tiny.gguf";
  const std::string args = "convert --synthetic stories110M --type q4_0 --vocab-from " + vocab + " -o " + out;
  const std::string tty = on_terminal(args);
  EXPECT_NE(tty.find("writing " + out + " ["), std::string::npos) << tty;
  auto piped = run_command(tally_test::tally_binary() + " " + args);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find('\r'), std::string::npos) << piped.err;
}

TEST(Progress, BenchReportsEachMeasurementOnATerminalOnly) {
  if (run_command("command -v script").exit_code != 0) GTEST_SKIP() << "script(1) is not installed";
  const std::string args = "bench --prompt 8 --batch 1 --reps 1 --warmup 0 --bandwidth-mib 16";
  const std::string tty = on_terminal(args);
  EXPECT_NE(tty.find("bench: "), std::string::npos) << tty;
  auto piped = run_command(tally_test::tally_binary() + " " + args);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("bench: "), std::string::npos) << piped.err;
  EXPECT_NE(piped.out.find("tally bench: "), std::string::npos) << piped.out;  // the table stays
}

}  // namespace
