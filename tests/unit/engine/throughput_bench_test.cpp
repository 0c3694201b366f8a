// The pieces of `tally bench throughput`: length ranges, the workload, and one small run of
// each scheduler (every drawn output token is produced; paged KV wastes less than contiguous).
#include "engine/throughput_bench.h"

#include <vector>

#include <gtest/gtest.h>

#include "engine/replay_bench.h"
#include "engine_test_util.h"
#include "tokenizer/tokenizer.h"

namespace tally_test {
namespace {

TEST(ThroughputBench, ParsesLengthRanges) {
  auto one = tally::parse_length_range("64");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->lo, 64);
  EXPECT_EQ(one->hi, 64);
  auto range = tally::parse_length_range("16..128");
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->lo, 16);
  EXPECT_EQ(range->hi, 128);
  for (const char* bad : {"", "0", "-3", "8..4", "a..b", "16..", "..16", "1.5", "3..4..5"}) {
    EXPECT_EQ(tally::parse_length_range(bad).status().code(), tally::ErrorCode::kInvalidArgument)
        << bad;
  }
}

TEST(ThroughputBench, RunsBothSchedulersOnTheSameWorkload) {
  tally::ThroughputWorkload w;
  w.n_requests = 12;
  w.input = {4, 40};
  w.output = {2, 30};
  w.seed = 3;
  tally::EngineConfig c = stories_config();
  c.max_seqs = 4;
  c.max_model_len = 128;
  auto engine = make_engine(c);
  ASSERT_TRUE(engine);
  const auto reqs = tally::make_bench_requests(w, engine->tokenizer());
  engine.reset();
  ASSERT_EQ(reqs.size(), 12u);
  int64_t want_out = 0;
  for (const auto& r : reqs) {
    ASSERT_GE(r.prompt.size(), 4u);
    ASSERT_LE(r.prompt.size(), 40u);
    EXPECT_EQ(r.prompt[0], 1);  // BOS
    for (size_t i = 1; i < r.prompt.size(); ++i) EXPECT_NE(r.prompt[i], 1);
    want_out += r.max_tokens;
  }
  auto paged = tally::run_throughput(c, w);
  ASSERT_TRUE(paged.ok()) << paged.status().to_string();
  c.static_batching = true;
  auto fixed = tally::run_throughput(c, w);
  ASSERT_TRUE(fixed.ok()) << fixed.status().to_string();
  EXPECT_EQ(paged->output_tokens, want_out);
  EXPECT_EQ(fixed->output_tokens, want_out);
  EXPECT_EQ(paged->input_tokens, fixed->input_tokens);
  EXPECT_GT(paged->output_tokens_per_second, 0);
  EXPECT_GT(paged->kv_utilization, 0.5);
  EXPECT_LT(fixed->kv_utilization, paged->kv_utilization);
  EXPECT_EQ(fixed->scheduler, "static");
  const std::string text = tally::format_throughput_report(*paged);
  EXPECT_NE(text.find("output tok/s"), std::string::npos);
  EXPECT_NE(text.find("kv utilization"), std::string::npos);
}

// The replay benchmark's prediction for a request's decode: no acceptance is one token per
// step (its last steps drafting less, so cheaper), full acceptance k + 1 tokens per step, and
// a long request tends to the steady state E(k) T(1) / T(1 + k).
TEST(ReplayBench, ExpectedDecodeTimeCountsTheShorterDraftsAtTheEnd) {
  const std::vector<double> t = {0, 1, 2, 3, 4, 5};  // T(n) = n
  // 5 decode tokens: drafts of 4, 3, 2, 1, 0 tokens.
  EXPECT_DOUBLE_EQ(tally::replay_expected_decode_seconds(0.0, 4, 6, t), 5 + 4 + 3 + 2 + 1);
  EXPECT_DOUBLE_EQ(tally::replay_expected_decode_seconds(1.0, 4, 6, t), 5);
  EXPECT_DOUBLE_EQ(tally::replay_expected_decode_seconds(1.0, 4, 11, t), 5 + 5);
  EXPECT_DOUBLE_EQ(tally::replay_expected_decode_seconds(0.5, 4, 1, t), 0);
  const double per_token = tally::replay_expected_decode_seconds(0.5, 4, 10001, t) / 10000;
  const double e4 = 1 + 0.5 + 0.25 + 0.125 + 0.0625;
  EXPECT_NEAR(per_token, 5 / e4, 0.001 * 5 / e4);
  EXPECT_NEAR(tally::replay_predicted_speedup(0.5, 4, 1, 5), e4 / 5, 1e-12);
}

}  // namespace
}  // namespace tally_test
