// `tally plan` as a user runs it: the seed example, JSON output, budgets and bad values.
#include <string>

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "plan/memory_size.h"
#include "support/run_command.h"
#include "support/test_data.h"

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

// `tally plan` describes the engine that `tally bench throughput` (and `tally serve`) builds
// from the same flags, defaults included (plan/run_defaults.h): the weights, buffers and KV
// lines of the engine's ledger are the plan's figures. (Its "other", the block pool's
// bookkeeping, is inside the plan's overhead reserve.)
TEST(CliPlan, DescribesTheEngineBuiltFromTheSameFlags) {
  auto plan = run_command(tally("plan --memory 300MiB --json"));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const auto j = nlohmann::json::parse(plan.out);
  auto bench = run_command(tally("bench throughput --memory-budget 300MiB --threads 1 "
                                 "--requests 2 --input-len 8 --output-len 4"));
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  using tally::plan::format_bytes;
  const int64_t blocks = j["budget"]["n_blocks"].get<int64_t>();
  const int64_t block_size = j["options"]["block_size"].get<int64_t>();
  const std::string weights = format_bytes(j["weights"]["bytes_per_rank"].get<int64_t>());
  const std::string kv = fmt::format(
      "{} = {} blocks x {} tokens = {} tokens x {}", format_bytes(blocks * j["kv"]["block_bytes"].get<int64_t>()),
      blocks, block_size, blocks * block_size, format_bytes(j["kv"]["bytes_per_token"].get<int64_t>()));
  EXPECT_NE(bench.out.find("  weights   " + weights + " ("), std::string::npos) << weights << "\n" << bench.out;
  EXPECT_NE(bench.out.find("  kv cache  " + kv + "\n"), std::string::npos) << kv << "\n" << bench.out;
  const std::string buffers = format_bytes(j["activations"]["bytes"].get<int64_t>());
  EXPECT_NE(bench.out.find("  buffers   " + buffers + "\n"), std::string::npos) << buffers << "\n" << bench.out;
  EXPECT_EQ(j["options"]["kv_type"].get<std::string>(), "f16");
}

// Speculation verifies each sequence's draft positions: its extra logits rows are in both the
// plan (told the draft length) and the engine's ledger.
TEST(CliPlan, CountsSpeculationsLogitsRowsAsTheEngineDoes) {
  auto plain = run_command(tally("plan --memory 300MiB --json --num-speculative-tokens 0"));
  auto plan = run_command(tally("plan --memory 300MiB --json --num-speculative-tokens 5"));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const int64_t with_drafts = nlohmann::json::parse(plan.out)["activations"]["bytes"].get<int64_t>();
  EXPECT_GT(with_drafts, nlohmann::json::parse(plain.out)["activations"]["bytes"].get<int64_t>());
  auto bench = run_command(tally("bench throughput --memory-budget 300MiB --threads 1 --requests 2 "
                                 "--input-len 8 --output-len 4 --speculative ngram "
                                 "--num-speculative-tokens 5"));
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const std::string buffers = tally::plan::format_bytes(with_drafts);
  EXPECT_NE(bench.out.find("  buffers   " + buffers + "\n"), std::string::npos) << buffers << "\n" << bench.out;
}

// A draft model (speculative decoding): `tally plan --draft-model` counts its weights, its
// buffers and its KV (in the target's blocks), and the engine built with the same flags and
// --memory-budget has the plan's block count and the plan's draft line.
TEST(CliPlan, CountsTheDraftModelAsTheEngineDoes) {
  const std::string draft = "--draft-model " + tally_test::repo_path("models/stories260K.gguf");
  auto plain = run_command(tally("plan --memory 300MiB --json"));
  auto plan = run_command(tally("plan --memory 300MiB --json " + draft));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto j = nlohmann::json::parse(plan.out);
  ASSERT_TRUE(j["draft"].is_object()) << plan.out;
  const int64_t blocks = j["budget"]["n_blocks"].get<int64_t>();
  EXPECT_LT(blocks, nlohmann::json::parse(plain.out)["budget"]["n_blocks"].get<int64_t>());
  EXPECT_EQ(j["kv"]["pool_block_bytes"].get<int64_t>(),
            j["kv"]["block_bytes"].get<int64_t>() +
                16 * j["draft"]["kv_bytes_per_token"].get<int64_t>());
  auto bench = run_command(tally("bench throughput --memory-budget 300MiB --threads 1 --requests 2 "
                                 "--input-len 8 --output-len 4 --speculative draft " + draft));
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  using tally::plan::format_bytes;
  const std::string kv = fmt::format("{} blocks x 16 tokens", blocks);
  EXPECT_NE(bench.out.find(kv), std::string::npos) << kv << "\n" << bench.out;
  const std::string draft_line = fmt::format(
      "({} weights + {} kv cache + {} buffers)", format_bytes(j["draft"]["weight_bytes"].get<int64_t>()),
      format_bytes(blocks * 16 * j["draft"]["kv_bytes_per_token"].get<int64_t>()),
      format_bytes(j["draft"]["activation_bytes"].get<int64_t>()));
  EXPECT_NE(bench.out.find(draft_line), std::string::npos) << draft_line << "\n" << bench.out;
  auto table = run_command(tally("plan --memory 300MiB " + draft));
  EXPECT_NE(table.out.find("draft model weights"), std::string::npos) << table.out;
  // Another vocabulary is refused, as the engine refuses it.
  auto other = run_command(tally("plan -m llama-2-7b " + draft));
  EXPECT_NE(other.exit_code, 0);
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
