// The SVG is well-formed (every tag closed in order, text escaped), has a polyline per
// series; .png is refused with its reason before any run.
#include <gtest/gtest.h>

#include <algorithm>

#include "loadgen/serving_plots.h"
#include "loadgen/svg_chart.h"

namespace tally::loadgen {
namespace {

bool entities_ok(const std::string& text) {
  for (size_t a = text.find('&'); a != std::string::npos; a = text.find('&', a + 1)) {
    bool known = false;
    for (const std::string e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
      known = known || text.compare(a, e.size(), e) == 0;
    }
    if (!known) return false;
  }
  return true;
}

// A small XML checker: tags balance, attribute quotes pair, no bare '&' or '<' in text.
bool well_formed(const std::string& xml, std::string& why) {
  std::vector<std::string> open;
  size_t i = xml.find("<svg");
  if (i == std::string::npos) return why = "no <svg", false;
  while (i < xml.size()) {
    const size_t lt = xml.find('<', i);
    const std::string text = xml.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (!entities_ok(text)) return why = "bare &", false;
    if (lt == std::string::npos) break;
    const size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return why = "unclosed tag", false;
    const std::string tag = xml.substr(lt + 1, gt - lt - 1);
    if (tag.find('<') != std::string::npos) return why = "'<' inside a tag", false;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return why = "odd quotes: " + tag, false;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1))
        return why = "mismatched </" + tag.substr(1), false;
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find(' ')));
    }
    i = gt + 1;
  }
  if (!open.empty()) return why = "unclosed <" + open.back(), false;
  return true;
}

std::vector<RequestRecord> records() {
  std::vector<RequestRecord> rs;
  for (int i = 0; i < 5; ++i) {
    RequestRecord r;
    r.success = true;
    r.send_s = 0.1 * i;
    r.ttft_s = 0.01 * (i + 1);
    r.e2e_s = 0.05 * (i + 1);
    r.output_tokens = 4;
    r.chunk_s = {r.ttft_s, r.ttft_s + 0.01, r.ttft_s + 0.02, r.e2e_s};
    rs.push_back(r);
  }
  return rs;
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(SvgPlot, RunPlotIsWellFormedWithFourPanels) {
  const std::string svg = run_plot_svg("a <model> & \"friends\"", records(), 0.7);
  std::string why;
  EXPECT_TRUE(well_formed(svg, why)) << why;
  EXPECT_EQ(count(svg, "<polyline"), 4u);
  EXPECT_NE(svg.find("a &lt;model&gt; &amp; &quot;friends&quot;"), std::string::npos);
  EXPECT_NE(svg.find("TTFT CDF"), std::string::npos);
}

TEST(SvgPlot, SweepPlotHasAPointPerRate) {
  BenchSummary s;
  s.output_throughput = 100;
  s.ttft.median = 5;
  s.ttft.percentiles = {{99, 9}};
  s.tpot.median = 1;
  s.tpot.percentiles = {{99, 2}};
  BenchSummary t = s;
  t.output_throughput = 300;
  const std::string svg = sweep_plot_svg("sweep", {{1.0, s}, {0.0, t}});
  std::string why;
  EXPECT_TRUE(well_formed(svg, why)) << why;
  EXPECT_EQ(count(svg, "<circle"), 8u);  // 2 rates x (median, p99) x 2 panels
  EXPECT_NE(svg.find("inf req/s"), std::string::npos);
}

TEST(SvgPlot, EmptyDataStillDrawsAxes) {
  std::string why;
  EXPECT_TRUE(well_formed(run_plot_svg("none", {}, 0.0), why)) << why;
}

TEST(SvgPlot, OnlySvgPathsAreAccepted) {
  EXPECT_TRUE(check_plot_path("out.svg").ok());
  EXPECT_TRUE(check_plot_path("OUT.SVG").ok());
  const Status png = check_plot_path("out.png");
  EXPECT_EQ(png.code(), ErrorCode::kUnsupported);
  EXPECT_NE(png.message().find("PNG is not supported"), std::string::npos);
  EXPECT_FALSE(check_plot_path("out.pdf").ok());
}

}  // namespace
}  // namespace tally::loadgen
