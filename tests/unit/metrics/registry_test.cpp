#include "metrics/registry.h"

#include <gtest/gtest.h>

namespace tally::metrics {
namespace {

TEST(Registry, RendersTheTextFormatExactly) {
  Registry r("tally:");
  auto& requests = r.add_counter("requests_total", "Requests.\nSecond \\ line.", {"code"});
  requests.with({"200"}).inc(3);
  requests.with({"a\"b\\c\nd"}).inc();
  r.add_gauge("temperature", "A gauge.").with({}).set(-1.5);
  auto& lat = r.add_histogram("latency_seconds", "A histogram.", {"model_name"}, {0.5, 1.0});
  Histogram& h = lat.with({"m"});
  h.observe(0.5);
  h.observe(0.75);
  h.observe(4.0);

  const std::string expected =
      "# HELP tally:requests_total Requests.\\nSecond \\\\ line.\n"
      "# TYPE tally:requests_total counter\n"
      "tally:requests_total{code=\"200\"} 3.0\n"
      "tally:requests_total{code=\"a\\\"b\\\\c\\nd\"} 1.0\n"
      "# HELP tally:temperature A gauge.\n"
      "# TYPE tally:temperature gauge\n"
      "tally:temperature -1.5\n"
      "# HELP tally:latency_seconds A histogram.\n"
      "# TYPE tally:latency_seconds histogram\n"
      "tally:latency_seconds_bucket{model_name=\"m\",le=\"0.5\"} 1.0\n"
      "tally:latency_seconds_bucket{model_name=\"m\",le=\"1.0\"} 2.0\n"
      "tally:latency_seconds_bucket{model_name=\"m\",le=\"+Inf\"} 3.0\n"
      "tally:latency_seconds_sum{model_name=\"m\"} 5.25\n"
      "tally:latency_seconds_count{model_name=\"m\"} 3.0\n";
  EXPECT_EQ(r.render(), expected);
}

TEST(Registry, WithReturnsTheSameChildForTheSameLabels) {
  Registry r;
  auto& f = r.add_counter("x_total", "x", {"a", "b"});
  Counter& c1 = f.with({"1", "2"});
  Counter& c2 = f.with({"1", "3"});
  EXPECT_EQ(&c1, &f.with({"1", "2"}));
  EXPECT_NE(&c1, &c2);
}

TEST(Registry, UnlabelledHistogramHasBareSuffixes) {
  Registry r;
  r.add_histogram("h", "h", {}, {1.0}).with({}).observe(2);
  EXPECT_EQ(r.render(),
            "# HELP h h\n# TYPE h histogram\n"
            "h_bucket{le=\"1.0\"} 0.0\nh_bucket{le=\"+Inf\"} 1.0\nh_sum 2.0\nh_count 1.0\n");
}

TEST(Registry, CollectHooksRunBeforeEachRender) {
  Registry r;
  Gauge& g = r.add_gauge("g", "g").with({});
  int scrapes = 0;
  r.add_collect_hook([&] { g.set(++scrapes); });
  EXPECT_NE(r.render().find("g 1.0\n"), std::string::npos);
  EXPECT_NE(r.render().find("g 2.0\n"), std::string::npos);
}

TEST(RegistryDeathTest, MisuseIsABug) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Registry r;
  r.add_gauge("g", "g");
  EXPECT_DEATH(r.add_gauge("g", "again"), "registered twice");
  EXPECT_DEATH(r.add_counter("requests", "no _total"), "_total");
  EXPECT_DEATH(r.add_gauge("x", "bad label", {"a:b"}), "invalid label name");
  EXPECT_DEATH(r.add_histogram("y", "le label", {"le"}, {1.0}), "histogram's own label");
  EXPECT_DEATH(r.add_histogram("z", "unsorted", {}, {2.0, 1.0}), "increasing");
  auto& f = r.add_counter("c_total", "c", {"a"});
  EXPECT_DEATH(f.with({"1", "2"}), "2 label values for 1 label names");
}

}  // namespace
}  // namespace tally::metrics
