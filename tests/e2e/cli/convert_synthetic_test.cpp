// `tally convert --synthetic` as a user runs it: a real preset's shapes written, readable by
// `tally info`, runnable by `tally generate`; flag mistakes are one-line usage errors.
// (Byte-identity across thread counts is tested on small shapes in tests/unit/quant.)
#include <cstdio>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

std::string tally(const std::string& args) { return tally_test::tally_binary() + " " + args; }

TEST(ConvertSynthetic, Stories110MQ4_0WritesAndRuns) {
  TALLY_REQUIRE_SHARED("models/ggml-vocab/ggml-vocab-llama-spm.gguf", vocab);
  const std::string a = tally_test::temp_dir() + "/s110_a.gguf";
  const std::string common = "convert --synthetic stories110M --type q4_0 --seed 9 --vocab-from " + shell_quote(vocab);
  auto r = run_command(tally(common + " --threads 2 -o " + shell_quote(a)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("110 tensors"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("32000 tokens"), std::string::npos) << r.err;

  r = run_command(tally("info " + shell_quote(a)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("synthetic stories110M"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("109529856"), std::string::npos) << r.out;  // llama2.c's 110M model
  r = run_command(tally("generate -m " + shell_quote(a) + " -p hello -n 3 --temp 0"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::remove(a.c_str());
}

// The newer weight types end to end: written by the converter, loaded, and generating the same
// greedy tokens on one thread and on two (each matmul row is computed in one fixed order).
TEST(ConvertSynthetic, Stories110MLowBitTypesRunTheSameOnAnyThreadCount) {
  TALLY_REQUIRE_SHARED("models/ggml-vocab/ggml-vocab-llama-spm.gguf", vocab);
  for (const char* type : {"q3_k", "q5_k_m", "iq4_xs", "q5_1"}) {
    SCOPED_TRACE(type);
    const std::string path = tally_test::temp_dir() + "/s110_" + type + ".gguf";
    auto r = run_command(tally(std::string("convert --synthetic stories110M --type ") + type +
                               " --seed 3 --vocab-from " + shell_quote(vocab) + " -o " + shell_quote(path)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string gen = "generate -m " + shell_quote(path) + " -p hello -n 6 --temp 0 -t ";
    const auto one = run_command(tally(gen + "1"));
    const auto two = run_command(tally(gen + "2"));
    EXPECT_EQ(one.exit_code, 0) << one.err;
    EXPECT_EQ(two.exit_code, 0) << two.err;
    EXPECT_FALSE(one.out.empty());
    EXPECT_EQ(one.out, two.out);
    std::remove(path.c_str());
  }
}

TEST(ConvertSynthetic, FlagMistakesAreUsageErrors) {
  const std::string out = " -o " + shell_quote(tally_test::temp_dir() + "/never.gguf");
  const std::pair<std::string, std::string> cases[] = {
      {"convert" + out, "give one of --llama2c, --synthetic or --hf"},
      {"convert --synthetic tinyllama-1.1b --llama2c " + shell_quote(tally_test::repo_path("README.md")) +
           " --tokenizer " + shell_quote(tally_test::repo_path("README.md")) + out,
       "give one of"},
      {"convert --synthetic gpt-5" + out, "no model preset named 'gpt-5'"},
      {"convert --synthetic tinyllama-1.1b --type iq2_xs" + out, "unknown weight type 'iq2_xs'"},
      {"convert --seed 3 --llama2c " + shell_quote(tally_test::repo_path("README.md")) + " --tokenizer " +
           shell_quote(tally_test::repo_path("README.md")) + out,
       "--seed only applies to --synthetic"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    auto r = run_command(tally(args));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  EXPECT_FALSE(tally_test::file_exists(tally_test::temp_dir() + "/never.gguf"));
}

}  // namespace
