// The report's last line has exactly the documented shape a script parses; failures are
// listed by reason; the sweep table has a row per rate.
#include "loadgen/report.h"

#include <gtest/gtest.h>

#include <regex>

namespace tally::loadgen {
namespace {

BenchSummary sample() {
  BenchSummary s;
  s.completed = 7;
  s.failed = 1;
  s.output_throughput = 1234.567;
  s.ttft.median = 12.345;
  s.tpot.median = 3.21;
  s.ttft.percentiles = {{50, 12.345}, {90, 20}, {99, 30}};
  s.failure_reasons["HTTP 503: queue full"] = 1;
  return s;
}

TEST(Report, ScriptLineHasTheExactShape) {
  EXPECT_EQ(script_line(sample()),
            "output tok/s: 1234.57  ttft p50: 12.35 ms  tpot p50: 3.21 ms  failed: 1");
}

TEST(Report, EndsWithTheScriptLineAndListsFailures) {
  RunInfo info;
  info.base_url = "http://h:1";
  info.endpoint = "/v1/completions";
  info.model = "m";
  const std::string text = format_report(info, sample());
  const std::regex last(
      R"(\noutput tok/s: [0-9]+\.[0-9]{2}  ttft p50: [0-9]+\.[0-9]{2} ms  tpot p50: [0-9]+\.[0-9]{2} ms  failed: [0-9]+\n$)");
  EXPECT_TRUE(std::regex_search(text, last)) << text;
  EXPECT_NE(text.find("Failed requests:                         1"), std::string::npos) << text;
  EXPECT_NE(text.find("1 x HTTP 503: queue full"), std::string::npos) << text;
  EXPECT_NE(text.find("P99 TTFT (ms):                           30.00"), std::string::npos) << text;
  EXPECT_EQ(text.find("P50 TTFT"), std::string::npos) << "the median is shown once";
}

TEST(Report, MetricsCanBeLeftOut) {
  RunInfo info;
  info.metrics = {"ttft"};
  const std::string text = format_report(info, sample());
  EXPECT_NE(text.find("Time to First Token"), std::string::npos);
  EXPECT_EQ(text.find("Inter-token Latency"), std::string::npos);
}

TEST(Report, SweepTableHasOneRowPerRate) {
  const std::string t = format_sweep_table({{1.0, sample()}, {0.0, sample()}});
  EXPECT_NE(t.find("    1.00"), std::string::npos) << t;
  EXPECT_NE(t.find("     inf"), std::string::npos) << t;
}

}  // namespace
}  // namespace tally::loadgen
