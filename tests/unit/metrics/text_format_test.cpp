#include "metrics/text_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tally::metrics {
namespace {

// Expected strings are what Python's prometheus_client (floatToGoString) writes, i.e. what a
// vLLM /metrics shows.
TEST(FormatValue, MatchesPrometheusClientForBucketBounds) {
  EXPECT_EQ(format_value(0.001), "0.001");
  EXPECT_EQ(format_value(0.075), "0.075");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(1.0), "1.0");
  EXPECT_EQ(format_value(2.5), "2.5");
  EXPECT_EQ(format_value(2560.0), "2560.0");
  EXPECT_EQ(format_value(7680.0), "7680.0");
  EXPECT_EQ(format_value(100000.0), "100000.0");  // six digits: still fixed
}

TEST(FormatValue, MatchesPrometheusClientForSampleValues) {
  EXPECT_EQ(format_value(0.0), "0.0");
  EXPECT_EQ(format_value(3.0), "3.0");
  EXPECT_EQ(format_value(-2.0), "-2.0");
  EXPECT_EQ(format_value(1e-05), "1e-05");  // Python repr goes scientific below 1e-4
  EXPECT_EQ(format_value(0.0001), "0.0001");
  EXPECT_EQ(format_value(1234567.0), "1.234567e+06");  // Go's exponent past six digits
  EXPECT_EQ(format_value(1000000.0), "1e+06");
  EXPECT_EQ(format_value(12345678.5), "1.23456785e+07");
  EXPECT_EQ(format_value(1e16), "1e+16");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
}

TEST(Escaping, LabelValuesEscapeBackslashQuoteNewline) {
  std::string out;
  append_escaped_label_value(out, "a\\b\"c\nd'e");
  EXPECT_EQ(out, "a\\\\b\\\"c\\nd'e");
}

TEST(Escaping, HelpEscapesBackslashAndNewlineButNotQuotes) {
  std::string out;
  append_escaped_help(out, "x\\y\n\"z\"");
  EXPECT_EQ(out, "x\\\\y\\n\"z\"");
}

TEST(Names, MetricNamesAllowColonsLabelNamesDoNot) {
  EXPECT_TRUE(valid_metric_name("vllm:time_to_first_token_seconds"));
  EXPECT_TRUE(valid_metric_name("_x1"));
  EXPECT_FALSE(valid_metric_name("1x"));
  EXPECT_FALSE(valid_metric_name("a-b"));
  EXPECT_FALSE(valid_metric_name(""));
  EXPECT_TRUE(valid_label_name("model_name"));
  EXPECT_FALSE(valid_label_name("a:b"));
  EXPECT_FALSE(valid_label_name("__name__"));
  EXPECT_FALSE(valid_label_name("9a"));
}

}  // namespace
}  // namespace tally::metrics
