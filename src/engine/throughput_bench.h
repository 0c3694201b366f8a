// The offline throughput benchmark behind `tally bench throughput`: N requests with prompt and
// output lengths drawn from ranges, all added at once to an EngineCore stepped on the calling
// thread, timed until the last one ends. Prompts are random non-special token ids and outputs ignore end-of-generation, so
// every request produces exactly its drawn output length.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"

namespace tally {

// Integers drawn uniformly from [lo, hi]; "64" is [64, 64], "16..128" is [16, 128].
struct LengthRange {
  int32_t lo = 0;
  int32_t hi = 0;
};
Result<LengthRange> parse_length_range(std::string_view text);

struct ThroughputWorkload {
  int32_t n_requests = 64;
  LengthRange input{16, 128};   // prompt tokens (BOS included)
  LengthRange output{16, 128};  // output tokens
  uint64_t seed = 1;
  // > 0: each prompt repeats one random run of this many tokens (a copy-heavy workload, where
  // n-gram speculation finds its drafts); 0: every prompt token drawn on its own.
  int32_t prompt_period = 0;
};

struct ThroughputReport {
  std::string scheduler;  // "continuous" or "static"
  int32_t n_requests = 0;
  int64_t input_tokens = 0;
  int64_t output_tokens = 0;
  double wall_seconds = 0;
  double requests_per_second = 0;
  double output_tokens_per_second = 0;
  double total_tokens_per_second = 0;  // (input + output) / wall
  double mean_ttft_seconds = 0;
  double mean_tpot_seconds = 0;  // per output token after the first, averaged over requests
  double kv_utilization = 0;     // tokens stored / tokens reserved, over all steps
  int64_t preemptions = 0;
  int64_t steps = 0;
  bool speculative = false;   // speculation on: the counters below are printed
  SpecDecodeCounters spec;
  MemoryLedger ledger;
};

// The prompts and output lengths of a workload, for an engine's tokenizer (special tokens
// are never drawn into a prompt).
struct BenchRequest {
  std::vector<int32_t> prompt;
  int32_t max_tokens = 0;
};
std::vector<BenchRequest> make_bench_requests(const ThroughputWorkload& w, const Tokenizer& tok);

// What a run may take in or give back beyond its report (the replay benchmark's use).
struct ThroughputHooks {
  // [request] recorded continuations: each request's drafts (EngineRequest::replay_draft).
  const std::vector<std::vector<int32_t>>* replay_drafts = nullptr;
  std::vector<std::vector<int32_t>>* outputs = nullptr;  // [request] its output tokens
  StepCostTable* step_cost = nullptr;                     // the engine's T(n) at the end
};

// Creates an engine core from `config` and runs the workload on it. An error from any request
// fails the run.
Result<ThroughputReport> run_throughput(const EngineConfig& config, const ThroughputWorkload& w,
                                        const ThroughputHooks& hooks = {});

// The report as the lines `tally bench throughput` prints.
std::string format_throughput_report(const ThroughputReport& r);

}  // namespace tally
