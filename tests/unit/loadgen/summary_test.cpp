// Statistics on known data: numpy-style percentiles, what counts toward each metric, failures
// by reason, goodput under SLOs, the throughput timeline conserving tokens.
#include "loadgen/summary.h"

#include <gtest/gtest.h>

namespace tally::loadgen {
namespace {

RequestRecord ok_record(double ttft, double e2e, int out, std::vector<double> chunks = {}) {
  RequestRecord r;
  r.success = true;
  r.ttft_s = ttft;
  r.e2e_s = e2e;
  r.output_tokens = out;
  r.input_tokens = 10;
  r.usage_reported = true;
  r.chunk_s = chunks.empty() ? std::vector<double>{ttft} : std::move(chunks);
  return r;
}

TEST(Summary, PercentilesInterpolateAsNumpy) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 50), 3);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 90), 4.6);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 99), 4.96);
  EXPECT_DOUBLE_EQ(percentile_sorted(v, 100), 5);
  EXPECT_DOUBLE_EQ(percentile_sorted({1, 2, 3, 4}, 50), 2.5);
}

TEST(Summary, MetricsInMillisecondsWithMeanAndStd) {
  const MetricSummary m = summarize_ms({0.001, 0.002, 0.003, 0.004}, {50, 99});
  EXPECT_EQ(m.n, 4);
  EXPECT_DOUBLE_EQ(m.mean, 2.5);
  EXPECT_DOUBLE_EQ(m.median, 2.5);
  EXPECT_NEAR(m.stddev, 1.118033988749895, 1e-12);
  EXPECT_NEAR(m.percentiles[1].second, 3.97, 1e-12);
}

TEST(Summary, CountsThroughputTpotItlAndFailures) {
  std::vector<RequestRecord> rs;
  rs.push_back(ok_record(0.1, 0.5, 5, {0.1, 0.2, 0.3, 0.4, 0.5}));  // tpot 0.1
  rs.push_back(ok_record(0.2, 0.2, 1));                             // one token: no tpot
  RequestRecord bad;
  bad.error = "HTTP 500: boom";
  rs.push_back(bad);
  rs.push_back(bad);
  const BenchSummary s = summarize(rs, 2.0, {}, {50, 99});
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.failure_reasons.at("HTTP 500: boom"), 2);
  EXPECT_EQ(s.total_input, 20);
  EXPECT_EQ(s.total_output, 6);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 3.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 13.0);
  EXPECT_EQ(s.tpot.n, 1);
  EXPECT_NEAR(s.tpot.mean, 100.0, 1e-9);
  EXPECT_EQ(s.itl.n, 4);
  EXPECT_NEAR(s.itl.median, 100.0, 1e-9);
  EXPECT_EQ(s.ttft.n, 2);
  EXPECT_NEAR(s.ttft.mean, 150.0, 1e-9);
  EXPECT_FALSE(s.goodput.has_value());
}

TEST(Summary, GoodputCountsRequestsMeetingEverySlo) {
  std::vector<RequestRecord> rs = {ok_record(0.05, 0.45, 5), ok_record(0.3, 0.7, 5),
                                   ok_record(0.05, 2.05, 5)};
  Slo slo;
  slo.ttft_ms = 100;
  slo.tpot_ms = 150;  // tpots: 100, 100, 500 ms
  const BenchSummary s = summarize(rs, 4.0, slo, {99});
  EXPECT_EQ(s.good_requests, 1);
  ASSERT_TRUE(s.goodput.has_value());
  EXPECT_DOUBLE_EQ(*s.goodput, 0.25);
}

TEST(Summary, TimelineConservesOutputTokens) {
  std::vector<RequestRecord> rs = {ok_record(0.1, 0.9, 6, {0.1, 0.5, 0.9}),
                                   ok_record(0.2, 1.7, 4, {0.2, 1.7})};
  rs[1].send_s = 0.3;
  const auto tl = output_throughput_timeline(rs, 2.0, 0.5);
  ASSERT_EQ(tl.size(), 4u);
  double tokens = 0;
  for (const auto& [t, v] : tl) tokens += v * 0.5;
  EXPECT_NEAR(tokens, 10.0, 1e-9);
  // Request 0: 2 tokens a chunk at 0.1, 0.5, 0.9; request 1 (sent at 0.3): 2 at 0.5 and 2.0
  // (the last instant falls in the last bin).
  EXPECT_NEAR(tl[0].second * 0.5, 2, 1e-9);
  EXPECT_NEAR(tl[1].second * 0.5, 6, 1e-9);
  EXPECT_NEAR(tl[2].second * 0.5, 0, 1e-9);
  EXPECT_NEAR(tl[3].second * 0.5, 2, 1e-9);
}

}  // namespace
}  // namespace tally::loadgen
