// `tally perplexity` (llama.cpp's method) on the bundled stories260K and a TinyStories-style
// text written for these tests (tests/data/tinystories_eval.txt): in-domain text scores far
// below the 512-token vocabulary's uniform perplexity, the figure does not depend on the
// thread count, a quantized model scores close to the f32 one (and diverges a little from
// its distributions), --kv-type / -k / -v each change the cache scored, and a text shorter
// than one chunk is a usage error.
#include <cstdio>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

std::string tally(const std::string& args) { return tally_test::tally_binary() + " " + args; }

double ppl_of(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex("PPL = ([0-9.]+) \\+/- ([0-9.]+) \\((\\d+) chunks"))) {
    ADD_FAILURE() << out;
    return 0.0;
  }
  return std::stod(m[1]);
}

TEST(CliPerplexity, Stories260KOnTinyStoriesText) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string text = shell_quote(tally_test::repo_path("tests/data/tinystories_eval.txt"));
  const std::string cmd = "perplexity -m " + shell_quote(model) + " -f " + text + " --ctx 128 -t ";
  const auto one = run_command(tally(cmd + "1"));
  const auto two = run_command(tally(cmd + "2"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(one.out, two.out);
  EXPECT_NE(one.out.find("chunks of 128 tokens"), std::string::npos) << one.out;
  const double f32 = ppl_of(one.out);
  EXPECT_GT(f32, 1.0);
  EXPECT_LT(f32, 20.0);  // uniform over 512 tokens would be 512

  const std::string q = tally_test::temp_dir() + "/s260k_ppl_q4_k_m.gguf";
  auto r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(q) + " Q4_K_M --overwrite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_command(tally("perplexity -m " + shell_quote(q) + " -f " + text + " --ctx 128"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double q4 = ppl_of(r.out);
  EXPECT_GT(q4, f32 * 0.95);
  EXPECT_LT(q4, f32 * 1.25);
  std::remove(q.c_str());
}

double figure(const std::string& out, const std::string& label) {
  const size_t at = out.find(label + " = ");
  if (at == std::string::npos) {
    ADD_FAILURE() << label << " not in " << out;
    return -1.0;
  }
  return std::stod(out.substr(at + label.size() + 3));
}

// The base model against itself: no divergence at all; a quantized model: a little.
TEST(CliPerplexity, KlDivergenceAgainstTheF32Base) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string text = " -f " + shell_quote(tally_test::repo_path("tests/data/tinystories_eval.txt")) + " --ctx 128";
  const std::string base = tally_test::temp_dir() + "/s260k.kld";
  auto r = run_command(tally("perplexity -m " + shell_quote(model) + text + " --kl-divergence-base " + shell_quote(base)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double f32 = ppl_of(r.out);
  r = run_command(tally("perplexity -m " + shell_quote(model) + text + " --kl-divergence --kl-divergence-base " +
                        shell_quote(base)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(figure(r.out, "Mean KLD"), 0.0) << r.out;
  EXPECT_EQ(figure(r.out, "Same top"), 100.0) << r.out;
  EXPECT_NEAR(figure(r.out, "PPL(base)"), f32, 1e-3) << r.out;

  const std::string q = tally_test::temp_dir() + "/s260k_kld_q3_k_m.gguf";
  r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(q) + " Q3_K_M --overwrite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_command(tally("perplexity -m " + shell_quote(q) + text + " --kl-divergence --kl-divergence-base " +
                        shell_quote(base)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double kld = figure(r.out, "Mean KLD");
  EXPECT_GT(kld, 0.0) << r.out;
  EXPECT_LT(kld, 0.1) << r.out;
  EXPECT_GT(figure(r.out, "Same top"), 80.0) << r.out;

  // Another context is another set of rows: refused.
  r = run_command(tally("perplexity -m " + shell_quote(q) + " -f " +
                        shell_quote(tally_test::repo_path("tests/data/tinystories_eval.txt")) +
                        " --ctx 64 --kl-divergence --kl-divergence-base " + shell_quote(base)));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ctx 128, this run has 512 and 64"), std::string::npos) << r.err;
  std::remove(q.c_str());
  std::remove(base.c_str());
}

// --kv-type / --kv-type-k / --kv-type-v each reach the cache that is scored: against the
// default f32 cache's distributions, an f32 cache gives no divergence and each quantized one
// some; q4_0 K costs far more than q4_0 V on stories260K (its K has outlier channels, and
// K's error moves every score), so a flag that is ignored, or K and V swapped, fails here.
TEST(CliPerplexity, KvTypeFlagsChangeTheCacheScored) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string cmd = "perplexity -m " + shell_quote(model) + " -f " +
                          shell_quote(tally_test::repo_path("tests/data/tinystories_eval.txt")) + " --ctx 128";
  const std::string base = tally_test::temp_dir() + "/s260k_kv.kld";
  auto r = run_command(tally(cmd + " --kl-divergence-base " + shell_quote(base)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto kld = [&](const std::string& flags) {
    const auto run = run_command(tally(cmd + " " + flags + " --kl-divergence --kl-divergence-base " + shell_quote(base)));
    EXPECT_EQ(run.exit_code, 0) << flags << ": " << run.err;
    return figure(run.out, "Mean KLD");
  };
  EXPECT_EQ(kld("--kv-type f32"), 0.0);
  const double q8 = kld("--kv-type q8_0");
  const double k4 = kld("--kv-type-k q4_0");
  const double v4 = kld("--kv-type-v q4_0");
  const double both4 = kld("--kv-type q4_0");
  const double k4_over_q8 = kld("--kv-type q8_0 --kv-type-k q4_0");  // the override wins for K
  EXPECT_GT(q8, 0.0);
  EXPECT_LT(q8, 0.01);
  EXPECT_GT(v4, 0.0);
  EXPECT_GT(k4, 10 * v4);  // K's error moves every score; V's averages out
  EXPECT_NE(k4, both4);    // the V of --kv-type-k alone stays f32
  EXPECT_NE(k4_over_q8, k4);
  EXPECT_GT(k4_over_q8, 10 * q8);
  std::remove(base.c_str());
}

TEST(CliPerplexity, ATextShorterThanOneChunkIsAUsageError) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string text = shell_quote(tally_test::repo_path("tests/data/tinystories_eval.txt"));
  const auto r = run_command(tally("perplexity -m " + shell_quote(model) + " -f " + text + " --ctx 100000"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fewer than one chunk of 100000"), std::string::npos) << r.err;
}

}  // namespace
