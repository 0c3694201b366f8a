#include "loadgen/serving_plots.h"

#include <algorithm>
#include <fstream>

#include "loadgen/svg_chart.h"

namespace tally::loadgen {

namespace {

// (value in ms, fraction of samples <= value), one step per sample.
std::vector<std::pair<double, double>> cdf_ms(std::vector<double> samples_s) {
  std::sort(samples_s.begin(), samples_s.end());
  std::vector<std::pair<double, double>> pts;
  const double n = static_cast<double>(samples_s.size());
  for (size_t i = 0; i < samples_s.size(); ++i) {
    const double x = samples_s[i] * 1000.0;
    pts.emplace_back(x, static_cast<double>(i) / n);
    pts.emplace_back(x, static_cast<double>(i + 1) / n);
  }
  return pts;
}

ChartPanel cdf_panel(const std::string& title, const std::string& color,
                     std::vector<double> samples_s) {
  ChartPanel p{title + " CDF", title + " (ms)", "fraction of requests", {}};
  p.series.push_back({title, color, cdf_ms(std::move(samples_s)), false, {}});
  return p;
}

}  // namespace

std::string run_plot_svg(const std::string& title, const std::vector<RequestRecord>& records,
                         double duration_s) {
  std::vector<double> ttft, tpot, e2e;
  for (const auto& r : records) {
    if (!r.success) continue;
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    if (r.output_tokens > 1) tpot.push_back(r.tpot_s());
  }
  std::vector<ChartPanel> panels;
  panels.push_back(cdf_panel("TTFT", "#1f77b4", std::move(ttft)));
  panels.push_back(cdf_panel("TPOT", "#ff7f0e", std::move(tpot)));
  panels.push_back(cdf_panel("E2E latency", "#2ca02c", std::move(e2e)));
  // About 40 bins over the run, at least 10 ms each.
  const double bin = std::max(0.01, duration_s / 40.0);
  std::vector<std::pair<double, double>> steps;
  for (const auto& [t, v] : output_throughput_timeline(records, duration_s, bin)) {
    steps.emplace_back(t, v);
    steps.emplace_back(t + bin, v);
  }
  ChartPanel tput{"Output throughput over time", "time since start (s)", "output tok/s", {}};
  tput.series.push_back({"output tok/s", "#d62728", std::move(steps), false, {}});
  panels.push_back(std::move(tput));
  return render_svg(title, panels);
}

std::string sweep_plot_svg(const std::string& title, const std::vector<SweepPoint>& points) {
  auto curve = [&points](const char* name, const char* color, auto pick) {
    ChartSeries s{name, color, {}, true, {}};
    for (const auto& p : points) {
      s.points.emplace_back(p.summary.output_throughput, pick(p.summary));
      s.point_labels.push_back(format_rate(p.request_rate) + " req/s");
    }
    return s;
  };
  auto p99 = [](const MetricSummary& m) {
    for (const auto& [q, v] : m.percentiles) {
      if (q == 99) return v;
    }
    return m.percentiles.empty() ? m.median : m.percentiles.back().second;
  };
  ChartPanel ttft{"TTFT vs throughput", "output tok/s", "TTFT (ms)", {}};
  ttft.series.push_back(
      curve("median", "#1f77b4", [](const BenchSummary& s) { return s.ttft.median; }));
  ttft.series.push_back(
      curve("p99", "#aec7e8", [&p99](const BenchSummary& s) { return p99(s.ttft); }));
  ChartPanel tpot{"TPOT vs throughput", "output tok/s", "TPOT (ms)", {}};
  tpot.series.push_back(
      curve("median", "#ff7f0e", [](const BenchSummary& s) { return s.tpot.median; }));
  tpot.series.push_back(
      curve("p99", "#ffbb78", [&p99](const BenchSummary& s) { return p99(s.tpot); }));
  return render_svg(title, {ttft, tpot});
}

Status check_plot_path(const std::string& path) {
  auto ends_with = [&path](const std::string& ext) {
    if (path.size() < ext.size()) return false;
    std::string tail = path.substr(path.size() - ext.size());
    std::transform(tail.begin(), tail.end(), tail.begin(), ::tolower);
    return tail == ext;
  };
  if (ends_with(".svg")) return Status::ok_status();
  if (ends_with(".png")) {
    return make_error(ErrorCode::kUnsupported,
                      "--plot '{}': PNG is not supported (tally carries no image library); "
                      "write .svg and convert it (e.g. rsvg-convert -o out.png out.svg)",
                      path);
  }
  return make_error(ErrorCode::kInvalidArgument, "--plot '{}' must end in .svg", path);
}

Status write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(ErrorCode::kIo, "'{}': cannot open for writing", path);
  out << text;
  if (!out) return make_error(ErrorCode::kIo, "'{}': write failed", path);
  return Status::ok_status();
}

}  // namespace tally::loadgen
