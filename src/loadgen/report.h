// The text report of a run, laid out as vLLM's bench serve prints it, then the failures by
// reason, and last one line a script can read:
//   output tok/s: X  ttft p50: Y ms  tpot p50: Z ms  failed: N
#pragma once

#include <string>
#include <vector>

#include "loadgen/summary.h"

namespace tally::loadgen {

// What a run was: shown in the report's head and in the JSON.
struct RunInfo {
  std::string base_url;
  std::string endpoint;
  std::string model;
  std::string dataset;
  std::string tokenizer;           // how prompt lengths were counted
  std::vector<std::string> notes;  // dataset remarks
  int num_prompts = 0;
  double request_rate = 0;  // 0 = inf
  double burstiness = 1.0;
  int max_concurrency = 0;  // 0 = none
  int max_in_flight = 0;
  std::vector<std::string> metrics = {"ttft", "tpot", "itl", "e2el"};  // sections shown
  std::vector<double> percentiles = {50, 90, 99};
};

std::string format_rate(double request_rate);  // "inf" or "4.00"
std::string format_report(const RunInfo& info, const BenchSummary& s);
// The last line, without a newline.
std::string script_line(const BenchSummary& s);

struct SweepPoint {
  double request_rate = 0;
  BenchSummary summary;
};
// One row per rate: req/s, output tok/s, TTFT/TPOT/E2E medians and p99, failures.
std::string format_sweep_table(const std::vector<SweepPoint>& points);

}  // namespace tally::loadgen
