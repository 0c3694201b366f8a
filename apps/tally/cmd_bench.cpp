// tally bench throughput: the offline benchmark of the engine (src/engine/throughput_bench.h);
// --compare runs the static baseline and continuous batching on the same workload. Plain
// `tally bench` stays the model benchmark of cmd_bench_model.cpp.
#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "engine/engine_flags.h"
#include "engine/replay_bench.h"
#include "engine/throughput_bench.h"

namespace tally::cli {

namespace {

struct BenchArgs {
  EngineFlags engine;  // the flags `tally serve` shares (engine/engine_flags.h)
  std::string input_len = "16..128";
  std::string output_len = "16..128";
  ThroughputWorkload workload;
  bool compare = false;
  double replay_acceptance = 0;  // > 0: the replay benchmark (engine/replay_bench.h)
};

// The engine's config from the flags; fills in the workload's length ranges.
Result<EngineConfig> resolve(BenchArgs& a) {
  TALLY_ASSIGN_OR_RETURN(EngineConfig config, engine_flags_to_config(a.engine));
  auto in = parse_length_range(a.input_len);
  if (!in.ok()) return in.status().with_context("--input-len");
  auto out = parse_length_range(a.output_len);
  if (!out.ok()) return out.status().with_context("--output-len");
  a.workload.input = *in;
  a.workload.output = *out;
  return config;
}

int run_bench(BenchArgs args) {
  auto config = resolve(args);
  if (!config.ok()) return report_error(config.status());
  if (args.replay_acceptance > 0) {
    auto rep = run_replay_bench(*config, args.workload, args.replay_acceptance);
    if (!rep.ok()) return report_error(rep.status());
    fmt::print("{}", format_replay_report(*rep));
    return kExitOk;
  }
  if (!args.compare) {
    auto rep = run_throughput(*config, args.workload);
    if (!rep.ok()) return report_error(rep.status());
    fmt::print("{}", format_throughput_report(*rep));
    return kExitOk;
  }
  EngineConfig fixed = *config;
  fixed.static_batching = true;
  auto base = run_throughput(fixed, args.workload);
  if (!base.ok()) return report_error(base.status());
  fmt::print("{}\n", format_throughput_report(*base));
  EngineConfig paged = *config;
  paged.static_batching = false;
  auto cont = run_throughput(paged, args.workload);
  if (!cont.ok()) return report_error(cont.status());
  fmt::print("{}\n", format_throughput_report(*cont));
  const double speedup = base->output_tokens_per_second > 0
                             ? cont->output_tokens_per_second / base->output_tokens_per_second
                             : 0.0;
  fmt::print("speedup: {:.2f}x\n", speedup);
  fmt::print("kv utilization: {:.0f}% paged vs {:.0f}% contiguous\n", cont->kv_utilization * 100,
             base->kv_utilization * 100);
  return kExitOk;
}

void add_throughput_flags(CLI::App& app, BenchArgs& a) {
  ThroughputWorkload& w = a.workload;
  app.add_option("-m,--model", a.engine.config.model_path, "GGUF model file or Hugging Face model directory")
      ->capture_default_str();
  app.add_option("--requests", w.n_requests, "Requests, all submitted at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--input-len", a.input_len, "Prompt tokens: N or LO..HI (uniform)")
      ->capture_default_str();
  app.add_option("--output-len", a.output_len, "Output tokens: N or LO..HI (uniform; EOS ignored)")
      ->capture_default_str();
  app.add_option("--seed", w.seed, "Seed of the workload (lengths and prompt tokens)")
      ->capture_default_str();
  app.add_option("--prompt-period", w.prompt_period,
                 "Prompts repeat a random run of N tokens (copy-heavy, for --speculative); 0 = "
                 "random tokens")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--replay-acceptance", a.replay_acceptance,
                 "Speculation at a known acceptance A in (0, 1]: replay each request's recorded "
                 "greedy output, a fraction 1 - A of it corrupted, as its draft; prints measured "
                 "vs predicted speed-up (docs/speculative.md)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--compare", a.compare,
               "Run static then continuous on the same workload; print the speedup");
  engine_flags_add(app, a.engine);
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  // `tally bench` alone is the model benchmark (cmd_bench_model.cpp); `tally bench throughput`
  // the engine's.
  Runner model_bench = add_bench_model_options(app);
  auto args = std::make_shared<BenchArgs>();
  args->engine.config.model_path = default_model_path();
  CLI::App* tp = app.add_subcommand(
      "throughput", "Offline engine throughput: requests/s, tok/s, TTFT, TPOT, KV utilization");
  add_throughput_flags(*tp, *args);
  // `tally bench serve`: the load generator against a server (cmd_bench_serve.cpp).
  Runner serve_bench = add_bench_serve_command(app);
  CLI::App* serve = app.get_subcommand("serve");
  return [args, tp, model_bench, serve, serve_bench] {
    if (serve->parsed()) return serve_bench();
    return tp->parsed() ? run_bench(*args) : model_bench();
  };
}

}  // namespace tally::cli
