// `tally quantize` as a user runs it, on the bundled stories260K (f32; rows of 64 and 172, so
// every k-quant falls back and q8_0 / q4_0 store its ffn_down in f16, as llama-quantize does):
// the output loads and generates, fallbacks are said on stderr, and mistakes are one-line
// usage errors.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

std::string tally(const std::string& args) { return tally_test::tally_binary() + " " + args; }

TEST(CliQuantize, Stories260KQ4KMWritesAndGenerates) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string out = tally_test::temp_dir() + "/s260k_q4_k_m.gguf";
  std::remove(out.c_str());
  auto r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(out) + " Q4_K_M --threads 2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("blk.0.attn_q.weight: rows of 64 are not whole q4_K blocks of 256: using q5_0"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("wrote " + out + " (Q4_K_M)"), std::string::npos) << r.err;
  r = run_command(tally("info " + shell_quote(out)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("q5_0"), std::string::npos) << r.out;
  r = run_command(tally("generate -m " + shell_quote(out) + " -p 'Once upon a time' -n 8 --temp 0"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(r.out.empty());

  // The output exists now: refused without --overwrite, replaced with it.
  r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(out) + " F16"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--overwrite"), std::string::npos) << r.err;
  r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(out) + " F16 --overwrite"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::remove(out.c_str());
}

// Rows of 172 are not whole 32-blocks: llama.cpp (and tally) keep such a tensor in f16.
TEST(CliQuantize, Q4_0KeepsRowsOfPartialBlocksInF16) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string out = tally_test::temp_dir() + "/q4_0.gguf";
  auto r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(out) + " Q4_0 --overwrite"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("blk.0.ffn_down.weight: rows of 172 are not whole q4_0 blocks of 32: using f16"),
            std::string::npos)
      << r.err;
  std::remove(out.c_str());
}

TEST(CliQuantize, MistakesAreUsageErrors) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string out = tally_test::temp_dir() + "/never.gguf";
  const std::pair<std::string, std::string> cases[] = {
      {" Q4_K_X", "unknown weight type 'Q4_K_X' (types: F32, F16, BF16, Q8_0"},
      {" Q4_K_M --output-tensor-type q9", "--output-tensor-type: unknown tensor type 'q9'"},
  };
  for (const auto& [args, message] : cases) {
    auto r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(out) + args));
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_FALSE(tally_test::file_exists(out)) << args;
  }
}

}  // namespace
