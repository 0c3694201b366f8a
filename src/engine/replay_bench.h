// `tally bench throughput --replay-acceptance A`: speculation's machinery at a known acceptance.
// The workload runs once without speculation, recording each request's greedy output; each
// recorded token is then replaced, with probability 1 - A, by another token, and the workload
// runs again with that corrupted recording as every request's draft (a fixed length of
// num_speculative_tokens). A draft token is then accepted with probability A, independently,
// as the cost model assumes, so the measured speed-up can be set beside the one the model
// predicts from the engine's measured step times:
//   predicted = E(k) * T(1) / T(1 + k),  E(k) = 1 + A + ... + A^k  (tokens per step)
// (batch 1: run with --max-seqs 1; the output is checked equal to the recording).
#pragma once

#include <string>

#include "base/status.h"
#include "engine/throughput_bench.h"

namespace tally {

struct ReplayReport {
  double acceptance = 0;  // A, as asked
  int32_t draft_len = 0;  // k
  ThroughputReport off;
  ThroughputReport replay;
  double t1_seconds = 0;     // T(1), from the run without speculation
  double tk_seconds = 0;     // T(1 + k), from the replay run
  double measured_speedup = 0;   // replay output tok/s / off output tok/s
  double predicted_speedup = 0;  // E(k) T(1) / T(1 + k); 0 when either was never measured
};

// The model's prediction above (0 when a time is missing).
double replay_predicted_speedup(double acceptance, int32_t k, double t1, double tk);

// InvalidArgument unless 0 < acceptance <= 1 and num_speculative_tokens >= 1; Internal when the
// replayed output differs from the recording (it never should: greedy output is the target's).
Result<ReplayReport> run_replay_bench(const EngineConfig& config, const ThroughputWorkload& w,
                                      double acceptance);

std::string format_replay_report(const ReplayReport& r);

}  // namespace tally
