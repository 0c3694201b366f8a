// The CLI as a user meets it: bad flags, values and files give one clear line on stderr and
// exit status 2; the commands work on the bundled model.
#include <string>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;

std::string tally(const std::string& args) { return tally_test::tally_binary() + " " + args; }

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

void expect_usage_error(const std::string& args, const std::string& needle) {
  SCOPED_TRACE(args);
  auto r = run_command(tally(args));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("tally: ", 0), 0u) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(CliErrors, UnknownFlag) { expect_usage_error("generate --bogus", "--bogus"); }
TEST(CliErrors, UnknownCommand) { expect_usage_error("frobnicate", "frobnicate"); }
TEST(CliErrors, MissingModelFile) {
  expect_usage_error("generate -m /nonexistent/model.gguf -p hi", "/nonexistent/model.gguf");
  expect_usage_error("info /nonexistent/model.gguf", "/nonexistent/model.gguf");
}
TEST(CliErrors, NotAGgufFile) {
  expect_usage_error("info " + tally_test::repo_path("README.md"), "gguf");
}
TEST(CliErrors, BadValues) {
  expect_usage_error("generate -n -3 -p hi", "-n");
  expect_usage_error("generate -n many -p hi", "many");
  expect_usage_error("generate --temp -1 -p hi", "--temp");
  expect_usage_error("generate --top-p 1.5 -p hi", "--top-p");
  expect_usage_error("generate --threads -2 -p hi", "--threads");
  expect_usage_error("generate --stop '' -p hi", "stop");
  expect_usage_error("generate --kv-type q3 -p hi", "--kv-type");
}
TEST(CliErrors, PromptLongerThanContext) {
  auto r = run_command(tally("generate -c 8 -p 'Once upon a time there was a little girl named Lily who'"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("the context holds 8"), std::string::npos) << r.err;
}

TEST(Cli, InfoDescribesBundledModel) {
  auto r = run_command(tally("info"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("architecture:  llama"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("292800"), std::string::npos) << r.out;  // parameter count
  EXPECT_NE(r.out.find("block_count"), std::string::npos) << r.out;
  auto t = run_command(tally("info --tensors"));
  EXPECT_NE(t.out.find("blk.4.ffn_down.weight"), std::string::npos) << t.out;
}

TEST(Cli, TokenizeShowsIdsAndPieces) {
  auto r = run_command(tally("tokenize " + tally_test::repo_path("models/stories260K.gguf") + " 'Lily and Tom'"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("'<s>'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5 tokens"), std::string::npos) << r.out;
}

TEST(Cli, GenerateStreamsAndReportsTimings) {
  auto r = run_command(tally("generate -p 'Once upon a time' -n 20 --seed 7 --temp 0.8"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Once upon a time", 0), 0u) << r.out;
  EXPECT_GT(r.out.size(), std::string("Once upon a time").size() + 20);
  for (const char* key : {"prompt tokens: 5", "TTFT:", "prefill:", "decode:"})
    EXPECT_NE(r.err.find(key), std::string::npos) << key << " in " << r.err;
}

TEST(Cli, SameSeedSameOutput) {
  const std::string cmd = tally("generate -p 'Once upon a time' -n 40 --seed 1234 --temp 1.0 --top-p 0.9");
  auto a = run_command(cmd + " -t 1");
  auto b = run_command(cmd + " -t 2");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  auto c = run_command(tally("generate -p 'Once upon a time' -n 40 --seed 4321 --temp 1.0 --top-p 0.9"));
  EXPECT_NE(a.out, c.out);
}

TEST(Cli, NoEchoAndStopString) {
  auto r = run_command(tally("generate -p 'Lily and Tom' --temp 0 -n 100 --no-echo --stop park"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Greedy continuation is " were playing in the park. ..." (the reference): stops before "park".
  EXPECT_EQ(r.out, " were playing in the \n");
}

// A 16-bit KV cache halves its memory (the timing line says which cache ran and its size);
// on the bundled model the greedy text of a short continuation stays the f32 cache's (the
// rounding is far below the logit gaps there). f16 is the default (plan/run_defaults.h).
TEST(Cli, GenerateWithHalfPrecisionKvCache) {
  const std::string cmd = tally("generate -p 'Lily and Tom' --temp 0 -n 12 --no-echo -c 64");
  auto f32 = run_command(cmd + " --kv-type f32");
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  EXPECT_NE(f32.err.find("KV f32 40.00 KiB"), std::string::npos) << f32.err;
  auto by_default = run_command(cmd);
  ASSERT_EQ(by_default.exit_code, 0) << by_default.err;
  EXPECT_NE(by_default.err.find("KV f16 20.00 KiB"), std::string::npos) << by_default.err;
  for (const char* type : {"f16", "bf16"}) {
    auto half = run_command(cmd + " --kv-type " + type);
    ASSERT_EQ(half.exit_code, 0) << type << half.err;
    EXPECT_EQ(half.out, f32.out) << type;
    EXPECT_NE(half.err.find(std::string("KV ") + type + " 20.00 KiB"), std::string::npos)
        << half.err;
  }
}

// A q8_0 cache (stories260K's heads of 8 values: a block each, 10 bytes per 8 values) keeps the f32 cache's greedy text here too; K and V
// may differ (--kv-type-k / --kv-type-v), and the timing line names both.
TEST(Cli, GenerateWithQuantizedKvCache) {
  const std::string cmd = tally("generate -p 'Lily and Tom' --temp 0 -n 12 --no-echo -c 64");
  auto f32 = run_command(cmd + " --kv-type f32");
  ASSERT_EQ(f32.exit_code, 0) << f32.err;
  auto q8 = run_command(cmd + " --kv-type q8_0");
  ASSERT_EQ(q8.exit_code, 0) << q8.err;
  EXPECT_EQ(q8.out, f32.out);
  EXPECT_NE(q8.err.find("KV q8_0 12.50 KiB"), std::string::npos) << q8.err;
  auto mixed = run_command(cmd + " --kv-type-k q8_0 --kv-type-v f16");
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("KV q8_0/f16 16.25 KiB"), std::string::npos) << mixed.err;
}

}  // namespace
