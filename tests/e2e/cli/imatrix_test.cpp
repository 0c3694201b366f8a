// `tally imatrix` then `tally quantize --imatrix` on stories260K (issue 13's quality check):
// calibrated on tests/data/imatrix_calibration.txt (a text of its own, not the evaluation
// text), Q4_K_M has a lower KL divergence against the f32 model with the importance matrix
// than without; the legacy .dat file serves as well as the GGUF one; an importance
// matrix of another model is refused naming the mismatch.
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

std::string tally(const std::string& args) { return tally_test::tally_binary() + " " + args; }

double mean_kld(const std::string& out) {
  const size_t at = out.find("Mean KLD = ");
  if (at == std::string::npos) {
    ADD_FAILURE() << out;
    return -1.0;
  }
  return std::stod(out.substr(at + 11));
}

TEST(CliImatrix, ImatrixLowersQ4KMDivergenceOnStories260K) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string dir = tally_test::temp_dir();
  const std::string calib = shell_quote(tally_test::repo_path("tests/data/imatrix_calibration.txt"));
  const std::string eval = " -f " + shell_quote(tally_test::repo_path("tests/data/tinystories_eval.txt")) + " --ctx 128";
  for (const char* ext : {".gguf", ".dat"}) {
    auto r = run_command(tally("imatrix -m " + shell_quote(model) + " -f " + calib + " --ctx 128 -o " +
                               shell_quote(dir + "/s260" + ext)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("importance matrix of 35 matrices"), std::string::npos) << r.err;
  }
  const std::string base = dir + "/s260.kld";
  auto r = run_command(tally("perplexity -m " + shell_quote(model) + eval + " --kl-divergence-base " + shell_quote(base)));
  ASSERT_EQ(r.exit_code, 0) << r.err;

  double kld[2] = {};
  for (int with = 0; with < 2; ++with) {
    const std::string q = dir + "/q4km" + std::to_string(with) + ".gguf";
    r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(q) + " Q4_K_M --overwrite" +
                          (with ? " --imatrix " + shell_quote(dir + "/s260.gguf") : std::string())));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_command(tally("perplexity -m " + shell_quote(q) + eval + " --kl-divergence --kl-divergence-base " +
                          shell_quote(base)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    kld[with] = mean_kld(r.out);
  }
  std::printf("Q4_K_M mean KLD without %.6f with the imatrix %.6f\n", kld[0], kld[1]);
  EXPECT_LT(kld[1], kld[0] * 0.95);

  // The legacy file carries the same means (up to float rounding: mean * calls / calls), so
  // its quantized model is as good.
  const std::string legacy = dir + "/q4km_dat.gguf";
  r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(legacy) + " Q4_K_M --overwrite --imatrix " +
                        shell_quote(dir + "/s260.dat")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("with the importance matrix"), std::string::npos) << r.err;
  r = run_command(tally("perplexity -m " + shell_quote(legacy) + eval + " --kl-divergence --kl-divergence-base " +
                        shell_quote(base)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NEAR(mean_kld(r.out), kld[1], kld[1] * 0.01);
}

TEST(CliImatrix, AnotherModelsImatrixIsRefused) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", model);
  const std::string dir = tally_test::temp_dir();
  // One entry whose name stories260K (5 layers) does not have.
  std::string b;
  const auto i32 = [&b](int32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
  const std::string name = "blk.40.attn_q.weight";
  i32(1);
  i32(static_cast<int32_t>(name.size()));
  b += name;
  i32(1);
  i32(1);
  const float one = 1.0f;
  b.append(reinterpret_cast<const char*>(&one), 4);
  const std::string path = dir + "/other.dat";
  std::ofstream(path, std::ios::binary) << b;
  const std::string out = dir + "/refused.gguf";
  const auto r = run_command(tally("quantize " + shell_quote(model) + " " + shell_quote(out) + " Q4_K_M --imatrix " +
                                   shell_quote(path)));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("blk.40.attn_q.weight"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(out).good());
}

}  // namespace
