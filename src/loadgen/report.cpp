#include "loadgen/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tally::loadgen {

namespace {

constexpr int kWidth = 50;

void heading(std::string& out, const std::string& title, char fill) {
  const int pad = std::max(0, kWidth - static_cast<int>(title.size()));
  out += std::string(static_cast<size_t>(pad / 2), fill) + title +
         std::string(static_cast<size_t>(pad - pad / 2), fill) + "\n";
}

template <typename T>
void row(std::string& out, const std::string& label, const T& value) {
  out += fmt::format("{:<40} {}\n", label, value);
}

std::string number(double v) { return fmt::format("{:.2f}", v); }

std::string percentile_label(double q) {
  return q == std::floor(q) ? fmt::format("P{}", static_cast<int>(q)) : fmt::format("P{}", q);
}

void metric_section(std::string& out, const std::string& title, const std::string& unit_name,
                    const MetricSummary& m) {
  heading(out, title, '-');
  row(out, fmt::format("Mean {} (ms):", unit_name), number(m.mean));
  row(out, fmt::format("Median {} (ms):", unit_name), number(m.median));
  for (const auto& [q, v] : m.percentiles) {
    if (q == 50) continue;  // the median, just above
    row(out, fmt::format("{} {} (ms):", percentile_label(q), unit_name), number(v));
  }
}

}  // namespace

std::string format_rate(double request_rate) {
  return request_rate <= 0 || std::isinf(request_rate) ? "inf"
                                                       : fmt::format("{:.2f}", request_rate);
}

std::string format_report(const RunInfo& info, const BenchSummary& s) {
  std::string out;
  heading(out, " Serving Benchmark Result ", '=');
  row(out, "Target:", info.base_url + info.endpoint);
  row(out, "Model:", info.model);
  row(out, "Dataset:", info.dataset);
  row(out, "Prompt lengths counted by:", info.tokenizer);
  for (const auto& n : info.notes) row(out, "Note:", n);
  row(out, "Request rate (req/s):", format_rate(info.request_rate));
  if (info.burstiness != 1.0) row(out, "Burstiness:", number(info.burstiness));
  row(out,
      "Max concurrency:", info.max_concurrency > 0 ? std::to_string(info.max_concurrency) : "none");
  row(out, "Max requests in flight:", info.max_in_flight);
  row(out, "Successful requests:", s.completed);
  row(out, "Failed requests:", s.failed);
  if (s.short_outputs > 0) row(out, "Shorter outputs than asked:", s.short_outputs);
  row(out, "Benchmark duration (s):", number(s.duration_s));
  row(out, "Total input tokens:", s.total_input);
  row(out, "Total generated tokens:", s.total_output);
  row(out, "Request throughput (req/s):", number(s.request_throughput));
  if (s.goodput) row(out, "Request goodput (req/s):", number(*s.goodput));
  row(out, "Output token throughput (tok/s):", number(s.output_throughput));
  row(out, "Total token throughput (tok/s):", number(s.total_token_throughput));
  auto shown = [&info](const char* m) {
    return std::find(info.metrics.begin(), info.metrics.end(), m) != info.metrics.end();
  };
  if (shown("ttft")) metric_section(out, "Time to First Token", "TTFT", s.ttft);
  if (shown("tpot")) {
    metric_section(out, "Time per Output Token (excl. 1st token)", "TPOT", s.tpot);
  }
  if (shown("itl")) metric_section(out, "Inter-token Latency", "ITL", s.itl);
  if (shown("e2el")) metric_section(out, "End-to-end Latency", "E2EL", s.e2el);
  if (!s.failure_reasons.empty()) {
    heading(out, "Failures", '-');
    for (const auto& [reason, n] : s.failure_reasons) out += fmt::format("{:>6} x {}\n", n, reason);
  }
  heading(out, "", '=');
  out += script_line(s) + "\n";
  return out;
}

std::string script_line(const BenchSummary& s) {
  return fmt::format("output tok/s: {:.2f}  ttft p50: {:.2f} ms  tpot p50: {:.2f} ms  failed: {}",
                     s.output_throughput, s.ttft.median, s.tpot.median, s.failed);
}

std::string format_sweep_table(const std::vector<SweepPoint>& points) {
  std::string out = fmt::format("{:>8} {:>8} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}\n",
                                "rate", "req/s", "out tok/s", "ttft p50", "ttft p99", "tpot p50",
                                "tpot p99", "e2el p50", "failed");
  auto p99 = [](const MetricSummary& m) {
    for (const auto& [q, v] : m.percentiles) {
      if (q == 99) return v;
    }
    return m.percentiles.empty() ? 0.0 : m.percentiles.back().second;
  };
  for (const auto& p : points) {
    const BenchSummary& s = p.summary;
    out += fmt::format(
        "{:>8} {:>8.2f} {:>12.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f} {:>7}\n",
        format_rate(p.request_rate), s.request_throughput, s.output_throughput, s.ttft.median,
        p99(s.ttft), s.tpot.median, p99(s.tpot), s.e2el.median, s.failed);
  }
  out += "(latencies in ms)\n";
  return out;
}

}  // namespace tally::loadgen
