#include "engine/throughput_bench.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>

#include "engine/engine_core.h"
#include "engine/ledger_text.h"
#include "sampling/rng.h"
#include "tokenizer/tokenizer.h"

namespace tally {

namespace {

Result<int32_t> parse_length(std::string_view s, std::string_view whole) {
  int32_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "length '{}' is not N or LO..HI with positive integers", whole);
  }
  return v;
}

// What the benchmark keeps of each request's events.
struct BenchCollector {
  int32_t n_done = 0;
  int64_t output_tokens = 0;
  double ttft_sum = 0;
  double tpot_sum = 0;
  int32_t n_tpot = 0;
  Status error;
  std::vector<std::vector<int32_t>>* outputs = nullptr;  // [request id - 1], when recorded

  void on_event(const EngineEvent& e) {
    if (e.kind == EngineEventKind::kToken) {
      if (outputs != nullptr) (*outputs)[static_cast<size_t>(e.request_id - 1)].push_back(e.token);
      return;
    }
    if (e.kind == EngineEventKind::kError) {
      if (error.ok()) error = e.status;
    } else {
      output_tokens += e.completion_tokens;
      ttft_sum += e.timing.ttft_seconds;
      if (e.completion_tokens > 1) {
        tpot_sum += e.timing.decode_seconds / (e.completion_tokens - 1);
        ++n_tpot;
      }
    }
    if (e.request_done) ++n_done;
  }
};

}  // namespace

Result<LengthRange> parse_length_range(std::string_view text) {
  const size_t dots = text.find("..");
  if (dots == std::string_view::npos) {
    TALLY_ASSIGN_OR_RETURN(int32_t v, parse_length(text, text));
    return LengthRange{v, v};
  }
  TALLY_ASSIGN_OR_RETURN(int32_t lo, parse_length(text.substr(0, dots), text));
  TALLY_ASSIGN_OR_RETURN(int32_t hi, parse_length(text.substr(dots + 2), text));
  if (hi < lo) {
    return make_error(ErrorCode::kInvalidArgument, "length range '{}' runs backwards", text);
  }
  return LengthRange{lo, hi};
}

std::vector<BenchRequest> make_bench_requests(const ThroughputWorkload& w, const Tokenizer& tok) {
  std::vector<int32_t> plain;  // ids a prompt may use: no control, unused or EOG tokens
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (!tok.is_control(id) && !tok.is_eog(id) && id != tok.bos()) plain.push_back(id);
  }
  if (plain.empty()) plain.push_back(0);
  Xoshiro256 rng(w.seed);
  auto draw = [&rng](LengthRange r) {
    return r.lo + static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(r.hi - r.lo + 1));
  };
  std::vector<BenchRequest> out(static_cast<size_t>(w.n_requests));
  for (BenchRequest& r : out) {
    const int32_t len = draw(w.input);
    if (tok.bos() >= 0) r.prompt.push_back(tok.bos());
    const size_t first = r.prompt.size();
    while (static_cast<int32_t>(r.prompt.size()) < len) {
      const size_t at = r.prompt.size() - first;
      const bool repeat = w.prompt_period > 0 && at >= static_cast<size_t>(w.prompt_period);
      r.prompt.push_back(repeat ? r.prompt[first + at % static_cast<size_t>(w.prompt_period)]
                                : plain[rng.next_u64() % plain.size()]);
    }
    r.max_tokens = draw(w.output);
  }
  return out;
}

Result<ThroughputReport> run_throughput(const EngineConfig& config, const ThroughputWorkload& w,
                                        const ThroughputHooks& hooks) {
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core, EngineCore::create(config));
  const std::vector<BenchRequest> reqs = make_bench_requests(w, core->tokenizer());
  ThroughputReport rep;
  rep.scheduler = config.static_batching ? "static" : "continuous";
  rep.n_requests = w.n_requests;
  rep.ledger = core->ledger();
  BenchCollector c;
  c.outputs = hooks.outputs;
  if (c.outputs != nullptr) c.outputs->assign(reqs.size(), {});
  const auto t0 = EngineClock::now();
  RequestId next_id = 1;
  for (const BenchRequest& b : reqs) {
    EngineRequest r;
    r.prompt = b.prompt;
    r.max_tokens = b.max_tokens;
    r.sampling.temperature = 0.0f;
    r.ignore_eos = true;
    r.detokenize = false;
    if (hooks.replay_drafts != nullptr) {
      r.replay_draft = (*hooks.replay_drafts)[static_cast<size_t>(next_id - 1)];
    }
    rep.input_tokens += static_cast<int64_t>(b.prompt.size());
    TALLY_RETURN_IF_ERROR(core->check_request(r));
    core->add_request(next_id++, std::move(r), /*seed=*/0,
                      [&c](const EngineEvent& e) { c.on_event(e); }, t0);
  }
  while (core->has_unfinished()) core->step();
  rep.wall_seconds = std::chrono::duration<double>(EngineClock::now() - t0).count();
  TALLY_RETURN_IF_ERROR(c.error);
  if (c.n_done != w.n_requests) {
    return make_error(ErrorCode::kInternal, "bench: {} of {} requests ended", c.n_done,
                      w.n_requests);
  }
  const EngineMetrics m = core->metrics();
  rep.output_tokens = c.output_tokens;
  rep.requests_per_second = w.n_requests / rep.wall_seconds;
  rep.output_tokens_per_second = static_cast<double>(rep.output_tokens) / rep.wall_seconds;
  rep.total_tokens_per_second =
      static_cast<double>(rep.input_tokens + rep.output_tokens) / rep.wall_seconds;
  rep.mean_ttft_seconds = c.ttft_sum / w.n_requests;
  rep.mean_tpot_seconds = c.n_tpot > 0 ? c.tpot_sum / c.n_tpot : 0.0;
  rep.kv_utilization = m.kv_utilization;
  rep.preemptions = m.num_preemptions_total;
  rep.steps = m.steps_total;
  rep.speculative = m.spec_positions > 0;
  rep.spec = m.spec_decode;
  if (hooks.step_cost != nullptr) *hooks.step_cost = core->step_cost();
  return rep;
}

std::string format_throughput_report(const ThroughputReport& r) {
  std::string s;
  s += fmt::format("scheduler: {}\n", r.scheduler);
  s += "memory:\n" + format_ledger(r.ledger);
  s += fmt::format("requests: {}  input tokens: {}  output tokens: {}  wall: {:.2f} s\n",
                   r.n_requests, r.input_tokens, r.output_tokens, r.wall_seconds);
  s += fmt::format("throughput: {:.2f} requests/s  {:.1f} output tok/s  {:.1f} total tok/s\n",
                   r.requests_per_second, r.output_tokens_per_second, r.total_tokens_per_second);
  s += fmt::format("latency: mean TTFT {:.1f} ms  mean TPOT {:.2f} ms\n", r.mean_ttft_seconds * 1e3,
                   r.mean_tpot_seconds * 1e3);
  s += fmt::format(
      "kv utilization: {:.1f}% (tokens stored / tokens reserved)  preemptions: {}  "
      "steps: {}\n",
      r.kv_utilization * 100, r.preemptions, r.steps);
  if (r.speculative) {
    const SpecDecodeCounters& c = r.spec;
    s += fmt::format(
        "speculative: {} drafts  {} draft tokens  {} accepted ({:.1f}%)  {:.2f} tokens per "
        "draft\n",
        c.drafts, c.draft_tokens, c.accepted_tokens,
        c.draft_tokens > 0 ? 100.0 * c.accepted_tokens / c.draft_tokens : 0.0,
        c.drafts > 0 ? static_cast<double>(c.accepted_tokens) / c.drafts : 0.0);
  }
  return s;
}

}  // namespace tally
