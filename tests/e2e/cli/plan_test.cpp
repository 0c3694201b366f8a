// `tally plan` as a user runs it: the seed example, JSON output, budgets and bad values.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_command.h"

namespace {

using tally_test::run_command;

std::string tally(const std::string& args) { return tally_test::tally_binary() + " " + args; }

TEST(CliPlan, SevenBillionFp16NeedsHalfAMebibytePerToken) {
  auto r = run_command(tally("plan -m llama-2-7b --kv-type f16 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kv"]["bytes_per_token"].get<int64_t>(), 524288);
  auto t = run_command(tally("plan -m llama-2-7b"));
  EXPECT_NE(t.out.find("512.00 KiB  = 2 x 32 layers x 32 KV heads x 128 dims x 2 B (f16)"), std::string::npos)
      << t.out;
}

TEST(CliPlan, BudgetGivesCapacity) {
  auto r = run_command(tally("plan -m llama-3-8b --memory 24GiB --context 8192 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& b = j["budget"];
  EXPECT_GT(b["n_blocks"].get<int64_t>(), 0) << b.dump();
  EXPECT_EQ(b["token_capacity"].get<int64_t>(), b["n_blocks"].get<int64_t>() * 16);
}

TEST(CliPlan, BundledGgufIsTheDefault) {
  auto r = run_command(tally("plan"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("5 layers"), std::string::npos) << r.out;
}

TEST(CliPlan, BadValuesAreUsageErrors) {
  for (const char* args : {"plan -m no-such-model", "plan -m llama-2-7b --memory 12 parsecs",
                           "plan -m llama-2-7b --kv-type q9", "plan -m llama-2-7b --tp 0"}) {
    auto r = run_command(tally(args));
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("tally: ", 0), 0u) << r.err;
  }
}

}  // namespace
