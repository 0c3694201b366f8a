// --speculative draft --draft-model on the three commands that run the engine: `tally
// generate` prints the same text with and without the draft model (stories260K drafting for
// itself) and reports its drafts, seeded sampled text too under --spec-sampled-verify token;
// `tally bench throughput` runs it; a missing --draft-model is
// refused by all three with the same message before anything runs.
#include <string>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;

std::string stories() {
  return tally_test::shell_quote(tally_test::repo_path("models/stories260K.gguf"));
}

std::string tally(const std::string& command, const std::string& args) {
  return tally_test::tally_binary() + " " + command + " -m " + stories() + " " + args;
}

TEST(SpeculativeDraft, GenerateWithADraftModelPrintsTheSameText) {
  const std::string args = "-p 'Once upon a time' -n 80 --temp 0 --ignore-eos -t 1";
  auto off = run_command(tally("generate", args));
  auto draft = run_command(
      tally("generate", args + " --speculative draft --draft-length fixed --draft-model " +
                                stories()));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  ASSERT_EQ(draft.exit_code, 0) << draft.err;
  EXPECT_EQ(draft.out, off.out);
  EXPECT_NE(draft.err.find("speculative (draft): "), std::string::npos) << draft.err;
  EXPECT_NE(draft.err.find("accepted (100.0%)"), std::string::npos) << draft.err;
}

// Seeded sampling: the default --spec-sampled-verify token keeps the tokens drawn without
// speculation; q (rejection sampling with the real q) draws differently.
TEST(SpeculativeDraft, GenerateSeededSampledKeepsItsTextUnderTokenVerify) {
  const std::string args = "-p 'Once upon a time' -n 80 --temp 0.9 --seed 7 -t 1";
  // Every guess drafted: the adaptive rule drafts little with a draft model as dear as the
  // target (its passes are priced).
  const std::string draft_args =
      args + " --speculative draft --draft-length fixed --draft-model " + stories();
  auto off = run_command(tally("generate", args));
  auto token = run_command(tally("generate", draft_args));
  auto q = run_command(tally("generate", draft_args + " --spec-sampled-verify q"));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  ASSERT_EQ(token.exit_code, 0) << token.err;
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_EQ(token.out, off.out);
  EXPECT_NE(q.out, off.out);
  auto bad = run_command(tally("generate", draft_args + " --spec-sampled-verify exact"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--spec-sampled-verify must be token or q, got 'exact'"),
            std::string::npos)
      << bad.err;
}

TEST(SpeculativeDraft, BenchThroughputRunsWithADraftModel) {
  auto r = run_command(tally("bench throughput",
                             "--requests 4 --input-len 16 --output-len 24 -t 1 --max-model-len 128 "
                             "--speculative draft --draft-length fixed --draft-model " +
                                 stories()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE((r.out + r.err).find("speculative: "), std::string::npos) << r.out << r.err;
}

TEST(SpeculativeDraft, EveryCommandRefusesDraftWithoutAModel) {
  for (const char* command : {"generate", "serve", "bench throughput"}) {
    SCOPED_TRACE(command);
    auto r = run_command(tally(command, "--speculative draft"));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("--speculative draft needs --draft-model SMALL.gguf"), std::string::npos)
        << r.err;
  }
}

}  // namespace
