// The report's last line has exactly the documented shape a script parses; failures are
// listed by reason; the sweep table has a row per rate.
#include "loadgen/report.h"

#include <gtest/gtest.h>

#include <cstdio>

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

// "output tok/s: X  ttft p50: Y ms  tpot p50: Z ms  failed: N\n", X Y Z with 2 decimals:
// read back and printed again, the line must come out the same.
bool is_script_line(const std::string& line) {
  double x = 0, y = 0, z = 0;
  int n = 0;
  if (std::sscanf(line.c_str(), "output tok/s: %lf  ttft p50: %lf ms  tpot p50: %lf ms  failed: %d",
                  &x, &y, &z, &n) != 4) {
    return false;
  }
  char again[200];
  std::snprintf(again, sizeof again,
                "output tok/s: %.2f  ttft p50: %.2f ms  tpot p50: %.2f ms  failed: %d\n", x, y, z,
                n);
  return line == again;
}

TEST(Report, ScriptLineHasTheExactShape) {
  EXPECT_EQ(script_line(sample()),
            "output tok/s: 1234.57  ttft p50: 12.35 ms  tpot p50: 3.21 ms  failed: 1");
  std::string line = script_line(sample());
  line += '\n';  // appended: GCC 12 warns (-Wrestrict, wrongly) on std::string&& + "literal"
  EXPECT_TRUE(is_script_line(line));
  EXPECT_FALSE(
      is_script_line("output tok/s: 1234.5  ttft p50: 12.35 ms  tpot p50: 3.21 ms  failed: 1\n"));
}

TEST(Report, EndsWithTheScriptLineAndListsFailures) {
  const RunInfo info;
  const std::string text = format_report(info, sample());
  ASSERT_FALSE(text.empty());
  ASSERT_EQ(text.back(), '\n');
  const std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  EXPECT_TRUE(is_script_line(last)) << last;
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
