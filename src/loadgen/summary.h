// The figures of a benchmark run, computed from its records as vLLM's bench serve does:
// TTFT, TPOT and E2E over successful requests (TPOT over those with 2+ output tokens), ITL
// over every gap between text chunks of every successful request; throughputs over the run's
// duration; goodput = requests per second that met every SLO given.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/request_record.h"

namespace tally::loadgen {

// base/percentile.h's rule with q in percent (as --percentiles takes it): `sorted`
// non-empty, q in [0, 100].
double percentile_sorted(const std::vector<double>& sorted, double q);

struct MetricSummary {
  int64_t n = 0;  // samples; the rest are 0 when n == 0
  double mean = 0;
  double stddev = 0;  // population standard deviation (numpy's default)
  double median = 0;
  std::vector<std::pair<double, double>> percentiles;  // (q, value) for each q asked
};

// Of samples in seconds, reported in milliseconds.
MetricSummary summarize_ms(std::vector<double> samples_s, const std::vector<double>& qs);

struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

struct BenchSummary {
  int completed = 0;
  int failed = 0;
  int short_outputs = 0;  // completed with fewer tokens than asked under --ignore-eos
  double duration_s = 0;
  int64_t total_input = 0;
  int64_t total_output = 0;
  double request_throughput = 0;
  double output_throughput = 0;
  double total_token_throughput = 0;
  std::optional<double> goodput;  // requests/s meeting every SLO (only when an SLO is set)
  int good_requests = 0;
  MetricSummary ttft, tpot, itl, e2el;
  std::map<std::string, int> failure_reasons;  // reason -> how many
};

BenchSummary summarize(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo,
                       const std::vector<double>& percentiles);

// Output tokens per second over time: bins of `bin_s` from the benchmark's start, each text
// chunk counting its share of the request's output tokens. (bin start s, tok/s) pairs.
std::vector<std::pair<double, double>> output_throughput_timeline(
    const std::vector<RequestRecord>& records, double duration_s, double bin_s);

}  // namespace tally::loadgen
