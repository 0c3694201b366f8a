#include "loadgen/summary.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/percentile.h"

namespace tally::loadgen {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  return percentile_of_sorted(sorted, q / 100.0);
}

MetricSummary summarize_ms(std::vector<double> samples, const std::vector<double>& qs) {
  MetricSummary m;
  for (double q : qs) m.percentiles.emplace_back(q, 0.0);
  if (samples.empty()) return m;
  for (double& s : samples) s *= 1000.0;
  std::sort(samples.begin(), samples.end());
  m.n = static_cast<int64_t>(samples.size());
  double sum = 0;
  for (double s : samples) sum += s;
  m.mean = sum / static_cast<double>(m.n);
  double var = 0;
  for (double s : samples) var += (s - m.mean) * (s - m.mean);
  m.stddev = std::sqrt(var / static_cast<double>(m.n));
  m.median = percentile_sorted(samples, 50);
  for (auto& [q, v] : m.percentiles) v = percentile_sorted(samples, q);
  return m;
}

namespace {

bool meets(const RequestRecord& r, const Slo& slo) {
  if (slo.ttft_ms && r.ttft_s * 1000.0 > *slo.ttft_ms) return false;
  if (slo.tpot_ms && r.tpot_s() * 1000.0 > *slo.tpot_ms) return false;
  if (slo.e2el_ms && r.e2e_s * 1000.0 > *slo.e2el_ms) return false;
  return true;
}

}  // namespace

BenchSummary summarize(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo,
                       const std::vector<double>& percentiles) {
  BenchSummary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2el;
  for (const auto& r : records) {
    if (!r.success) {
      ++s.failed;
      ++s.failure_reasons[r.error.empty() ? "unknown" : r.error];
      continue;
    }
    ++s.completed;
    if (r.short_output) ++s.short_outputs;
    s.total_input += r.input_tokens;
    s.total_output += r.output_tokens;
    ttft.push_back(r.ttft_s);
    e2el.push_back(r.e2e_s);
    if (r.output_tokens > 1) tpot.push_back(r.tpot_s());
    for (double g : r.itl_s()) itl.push_back(g);
    if (slo.any() && meets(r, slo)) ++s.good_requests;
  }
  if (duration_s > 0) {
    s.request_throughput = s.completed / duration_s;
    s.output_throughput = static_cast<double>(s.total_output) / duration_s;
    s.total_token_throughput = static_cast<double>(s.total_input + s.total_output) / duration_s;
    if (slo.any()) s.goodput = s.good_requests / duration_s;
  } else if (slo.any()) {
    s.goodput = 0.0;
  }
  s.ttft = summarize_ms(std::move(ttft), percentiles);
  s.tpot = summarize_ms(std::move(tpot), percentiles);
  s.itl = summarize_ms(std::move(itl), percentiles);
  s.e2el = summarize_ms(std::move(e2el), percentiles);
  return s;
}

std::vector<std::pair<double, double>> output_throughput_timeline(
    const std::vector<RequestRecord>& records, double duration_s, double bin_s) {
  TALLY_CHECK(bin_s > 0, "bin of {} s", bin_s);
  const size_t n_bins = std::max<size_t>(1, static_cast<size_t>(std::ceil(duration_s / bin_s)));
  std::vector<double> tokens(n_bins, 0.0);
  for (const auto& r : records) {
    if (!r.success || r.chunk_s.empty()) continue;
    const double per_chunk =
        static_cast<double>(r.output_tokens) / static_cast<double>(r.chunk_s.size());
    for (double t : r.chunk_s) {
      const auto bin = static_cast<size_t>(std::max(0.0, (r.send_s + t) / bin_s));
      tokens[std::min(bin, n_bins - 1)] += per_chunk;
    }
  }
  std::vector<std::pair<double, double>> out;
  for (size_t i = 0; i < n_bins; ++i) {
    out.emplace_back(static_cast<double>(i) * bin_s, tokens[i] / bin_s);
  }
  return out;
}

}  // namespace tally::loadgen
