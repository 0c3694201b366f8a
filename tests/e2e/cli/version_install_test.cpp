// `tally --version` names the version, the commit and the CPU paths; `cmake --install` puts
// the binary, the bundled model and the docs under a prefix, and the installed binary finds
// its model there from any directory.
#include <string>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

TEST(Version, NamesVersionCommitAndCpuPaths) {
  auto r = run_command(tally_test::tally_binary() + " --version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("tally 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("(commit "), std::string::npos) << r.out;
  if (tally_test::file_exists(tally_test::repo_path(".git"))) {  // built from a git checkout
    EXPECT_EQ(r.out.find("(commit unknown"), std::string::npos) << r.out;
  }
  EXPECT_NE(r.out.find("CPU features: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernels: "), std::string::npos) << r.out;

  r = run_command("TALLY_ISA=scalar " + tally_test::tally_binary() + " --version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("kernels: scalar"), std::string::npos) << r.out;
}

TEST(Install, InstalledTallyFindsItsBundledModel) {
  const std::string prefix = tally_test::temp_dir() + "/prefix";
  auto r = run_command("cmake --install " + shell_quote(TALLY_BINARY_DIR) + " --prefix " + shell_quote(prefix));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string model = prefix + "/share/tally/models/stories260K.gguf";
  EXPECT_TRUE(tally_test::file_exists(model));
  EXPECT_TRUE(tally_test::file_exists(prefix + "/share/doc/tally/README.md"));
  EXPECT_TRUE(tally_test::file_exists(prefix + "/share/doc/tally/docs/cli.md"));

  r = run_command("cd / && env -u TALLY_MODEL " + shell_quote(prefix + "/bin/tally") + " info");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("file:          " + model), std::string::npos) << r.out;
  r = run_command("cd / && env -u TALLY_MODEL " + shell_quote(prefix + "/bin/tally") +
                  " generate --temp 0 -n 8 -p 'Once upon a time'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time", 0), 0u) << r.out;
}

}  // namespace
