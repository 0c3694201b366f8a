#include "engine/replay_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sampling/rng.h"

namespace tally {

namespace {

// Each token kept with probability `acceptance`, else replaced by a different id.
std::vector<std::vector<int32_t>> corrupt_recording(
    const std::vector<std::vector<int32_t>>& recorded, double acceptance, int32_t n_vocab,
    uint64_t seed) {
  Xoshiro256 rng(seed ^ 0x5eedf00dULL);
  std::vector<std::vector<int32_t>> out = recorded;
  for (std::vector<int32_t>& tokens : out) {
    for (int32_t& t : tokens) {
      if (rng.next_double() < acceptance) continue;
      const auto shift = 1 + rng.next_u64() % static_cast<uint64_t>(std::max(n_vocab - 1, 1));
      t = static_cast<int32_t>((static_cast<uint64_t>(t) + shift) % static_cast<uint64_t>(n_vocab));
    }
  }
  return out;
}

double measured_at(const StepCostTable& t, int32_t n) {
  double v = 0;
  if (t.measured(n)) t.estimate(n, std::span<double>(&v, 1));
  return v;
}

}  // namespace

double replay_predicted_speedup(double acceptance, int32_t k, double t1, double tk) {
  if (!(t1 > 0) || !(tk > 0)) return 0;
  double tokens = 0;
  for (int32_t j = 0; j <= k; ++j) tokens += std::pow(acceptance, j);
  return tokens * t1 / tk;
}

double replay_expected_decode_seconds(double acceptance, int32_t k, int32_t n_out,
                                      std::span<const double> step_seconds) {
  // f[r]: expected seconds to produce r more tokens.
  const int32_t n = std::max(n_out - 1, 0);
  std::vector<double> f(static_cast<size_t>(n) + 1, 0.0);
  for (int32_t r = 1; r <= n; ++r) {
    const int32_t kk = std::min(k, r - 1);
    double expect = step_seconds[static_cast<size_t>(1 + kk)];
    double reach = 1.0;  // P(the first i drafts accepted)
    for (int32_t i = 0; i <= kk; ++i) {
      const double p = i < kk ? reach * (1.0 - acceptance) : reach;  // exactly i accepted
      expect += p * f[static_cast<size_t>(r - (i + 1))];
      reach *= acceptance;
    }
    f[static_cast<size_t>(r)] = expect;
  }
  return f[static_cast<size_t>(n)];
}

Result<ReplayReport> run_replay_bench(const EngineConfig& config, const ThroughputWorkload& w,
                                      double acceptance) {
  if (!(acceptance > 0.0 && acceptance <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--replay-acceptance must be in (0, 1], got {}", acceptance);
  }
  if (config.spec.num_speculative_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--replay-acceptance needs --num-speculative-tokens >= 1");
  }
  ReplayReport rep;
  rep.acceptance = acceptance;
  rep.draft_len = config.spec.num_speculative_tokens;
  EngineConfig off = config;
  off.spec.mode = SpecMode::kOff;
  std::vector<std::vector<int32_t>> recorded;
  StepCostTable off_cost(1);
  TALLY_ASSIGN_OR_RETURN(rep.off, run_throughput(off, w, {nullptr, &recorded, &off_cost}));

  EngineConfig on = config;
  on.spec.mode = SpecMode::kNgram;
  on.spec.draft_length = DraftLengthRule::kFixed;
  int32_t n_vocab = 1;
  for (const auto& tokens : recorded) {
    for (int32_t t : tokens) n_vocab = std::max(n_vocab, t + 1);
  }
  // Any id the model has: the recording's largest is a lower bound, enough to differ.
  const std::vector<std::vector<int32_t>> drafts =
      corrupt_recording(recorded, acceptance, std::max(n_vocab, 2), w.seed);
  std::vector<std::vector<int32_t>> replayed;
  StepCostTable on_cost(1);
  TALLY_ASSIGN_OR_RETURN(rep.replay, run_throughput(on, w, {&drafts, &replayed, &on_cost}));
  if (replayed != recorded) {
    return make_error(ErrorCode::kInternal,
                      "replay: the output with speculation differs from the recording");
  }
  rep.t1_seconds = measured_at(off_cost, 1);
  rep.tk_seconds = measured_at(on_cost, 1 + rep.draft_len);
  rep.run_speedup = rep.off.output_tokens_per_second > 0
                        ? rep.replay.output_tokens_per_second / rep.off.output_tokens_per_second
                        : 0;
  rep.steady_speedup =
      replay_predicted_speedup(acceptance, rep.draft_len, rep.t1_seconds, rep.tk_seconds);
  rep.measured_speedup = rep.replay.mean_tpot_seconds > 0
                             ? rep.off.mean_tpot_seconds / rep.replay.mean_tpot_seconds
                             : 0;
  // T(n) of every draft length a step used, from the replay run (interpolated where a size
  // never ran alone: StepCostTable::estimate).
  std::vector<double> t(static_cast<size_t>(rep.draft_len) + 2, 0.0);
  t[1] = rep.t1_seconds;
  if (on_cost.measured(1 + rep.draft_len)) {
    on_cost.estimate(2, std::span<double>(t).subspan(2));
  }
  double off_seconds = 0;
  double on_seconds = 0;
  for (const auto& tokens : recorded) {
    const auto n_out = static_cast<int32_t>(tokens.size());
    off_seconds += std::max(n_out - 1, 0) * rep.t1_seconds;
    on_seconds += replay_expected_decode_seconds(acceptance, rep.draft_len, n_out, t);
  }
  const bool timed = std::all_of(t.begin() + 1, t.end(), [](double v) { return v > 0; });
  rep.predicted_speedup = timed && on_seconds > 0 ? off_seconds / on_seconds : 0;
  return rep;
}

std::string format_replay_report(const ReplayReport& r) {
  const SpecDecodeCounters& c = r.replay.spec;
  std::string s;
  s += fmt::format("replay at acceptance {:.2f}, {} draft tokens per step\n", r.acceptance,
                   r.draft_len);
  s += fmt::format("off:    {:.1f} output tok/s  {} steps\n", r.off.output_tokens_per_second,
                   r.off.steps);
  s += fmt::format("replay: {:.1f} output tok/s  {} steps  {} of {} draft tokens accepted\n",
                   r.replay.output_tokens_per_second, r.replay.steps, c.accepted_tokens,
                   c.draft_tokens);
  s += fmt::format("T(1) {:.3f} ms  T({}) {:.3f} ms\n", r.t1_seconds * 1e3, 1 + r.draft_len,
                   r.tk_seconds * 1e3);
  s += fmt::format("decode (mean TPOT): off {:.2f} ms  replay {:.2f} ms\n",
                   r.off.mean_tpot_seconds * 1e3, r.replay.mean_tpot_seconds * 1e3);
  s += fmt::format("decode speed-up: measured {:.2f}x  predicted {:.2f}x ({:.0f}% of predicted)\n",
                   r.measured_speedup, r.predicted_speedup,
                   r.predicted_speedup > 0 ? 100 * r.measured_speedup / r.predicted_speedup : 0.0);
  s += fmt::format("run speed-up (output tok/s, prefill included): {:.2f}x  steady-state "
                   "E(k) T(1) / T(1 + k): {:.2f}x\n",
                   r.run_speedup, r.steady_speedup);
  return s;
}

}  // namespace tally
