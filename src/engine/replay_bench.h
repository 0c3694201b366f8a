// `tally bench throughput --replay-acceptance A`: speculation's machinery at a known acceptance.
// The workload runs once without speculation, recording each request's greedy output; each
// recorded token is then replaced, with probability 1 - A, by another token, and the workload
// runs again with that corrupted recording as every request's draft (a fixed length of
// num_speculative_tokens). A draft token is then accepted with probability A, independently,
// as the cost model assumes, so the measured speed-up can be set beside the one the model
// predicts from the engine's measured step times. In steady state
//   E(k) * T(1) / T(1 + k),  E(k) = 1 + A + ... + A^k  (tokens per step);
// the prediction compared is the exact expectation for the workload's decode (each request's
// tokens after its first): a step drafts k' = min(k, tokens left - 1) (the draft bound of
// max_tokens), so a request's last steps draft less and cost T(1 + k'). The measured figure is
// the decode rate the issue names: mean TPOT without speculation / with it (batch 1: run with
// --max-seqs 1; the output is checked equal to the recording). The whole run's output tok/s
// (prefill included, which speculation does not speed up) is reported beside it.
#pragma once

#include <span>
#include <string>
#include <vector>

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
  double run_speedup = 0;        // replay output tok/s / off output tok/s (prefill included)
  double steady_speedup = 0;     // E(k) T(1) / T(1 + k); 0 when either was never measured
  double measured_speedup = 0;   // decode: off mean TPOT / replay mean TPOT
  double predicted_speedup = 0;  // decode: the workload's expectation (above); 0: unmeasured
};

// The steady-state prediction E(k) T(1) / T(1 + k) (0 when a time is missing).
double replay_predicted_speedup(double acceptance, int32_t k, double t1, double tk);

// Expected decode seconds of a request of n_out output tokens at batch 1, its first token
// being the prefill's: each step drafts k' = min(k, tokens left - 1), costs step_seconds[1 +
// k'] and yields 1 + the accepted drafts (each accepted with probability `acceptance` until
// the first rejection). step_seconds[n] = T(n) for n = 1..k + 1 (index 0 unused).
double replay_expected_decode_seconds(double acceptance, int32_t k, int32_t n_out,
                                      std::span<const double> step_seconds);

// InvalidArgument unless 0 < acceptance <= 1 and num_speculative_tokens >= 1; Internal when the
// replayed output differs from the recording (it never should: greedy output is the target's).
Result<ReplayReport> run_replay_bench(const EngineConfig& config, const ThroughputWorkload& w,
                                      double acceptance);

std::string format_replay_report(const ReplayReport& r);

}  // namespace tally
