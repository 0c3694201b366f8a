// tally bench throughput: the offline benchmark of the engine (src/engine/throughput_bench.h);
// --compare runs the static baseline and continuous batching on the same workload. Plain
// `tally bench` stays the model benchmark of cmd_bench_model.cpp.
#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "engine/throughput_bench.h"
#include "plan/memory_size.h"
#include "plan/plan.h"

namespace tally::cli {

namespace {

struct BenchArgs {
  EngineConfig engine;
  std::string scheduler = "continuous";
  std::string kv_type = "f32";
  std::string kv_cache_memory;
  std::string memory_budget;
  std::string input_len = "16..128";
  std::string output_len = "16..128";
  ThroughputWorkload workload;
  bool compare = false;
};

Status resolve(BenchArgs& a) {
  if (a.scheduler != "continuous" && a.scheduler != "static") {
    return make_error(ErrorCode::kInvalidArgument, "--scheduler is '{}' (continuous or static)",
                      a.scheduler);
  }
  a.engine.static_batching = a.scheduler == "static";
  TALLY_ASSIGN_OR_RETURN(a.engine.kv_type, plan::kv_type_from_name(a.kv_type));
  if (!a.kv_cache_memory.empty()) {
    auto m = plan::parse_memory_size(a.kv_cache_memory);
    if (!m.ok()) return m.status().with_context("--kv-cache-memory");
    a.engine.kv_cache_memory = *m;
  }
  if (!a.memory_budget.empty()) {
    auto m = plan::parse_memory_size(a.memory_budget);
    if (!m.ok()) return m.status().with_context("--memory-budget");
    a.engine.memory_budget = *m;
  }
  auto in = parse_length_range(a.input_len);
  if (!in.ok()) return in.status().with_context("--input-len");
  auto out = parse_length_range(a.output_len);
  if (!out.ok()) return out.status().with_context("--output-len");
  a.workload.input = *in;
  a.workload.output = *out;
  return Status::ok_status();
}

int run_bench(BenchArgs args) {
  if (Status st = resolve(args); !st.ok()) return report_error(st);
  if (!args.compare) {
    auto rep = run_throughput(args.engine, args.workload);
    if (!rep.ok()) return report_error(rep.status());
    fmt::print("{}", format_throughput_report(*rep));
    return kExitOk;
  }
  EngineConfig fixed = args.engine;
  fixed.static_batching = true;
  auto base = run_throughput(fixed, args.workload);
  if (!base.ok()) return report_error(base.status());
  fmt::print("{}\n", format_throughput_report(*base));
  EngineConfig paged = args.engine;
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
  EngineConfig& e = a.engine;
  ThroughputWorkload& w = a.workload;
  app.add_option("-m,--model", e.model_path, "GGUF model file")->capture_default_str();
  app.add_option("--requests", w.n_requests, "Requests, all submitted at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--input-len", a.input_len, "Prompt tokens: N or LO..HI (uniform)")
      ->capture_default_str();
  app.add_option("--output-len", a.output_len, "Output tokens: N or LO..HI (uniform; EOS ignored)")
      ->capture_default_str();
  app.add_option("--seed", w.seed, "Seed of the workload (lengths and prompt tokens)")
      ->capture_default_str();
  app.add_option("--scheduler", a.scheduler, "continuous or static (the classic baseline)")
      ->capture_default_str();
  app.add_flag("--compare", a.compare,
               "Run static then continuous on the same workload; print the speedup");
  app.add_option("-t,--threads", e.threads, "Compute threads; 0 = one per core")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-batched-tokens", e.max_batched_tokens, "Token budget of one step")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-seqs", e.max_seqs, "Sequences running at once")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-model-len", e.max_model_len, "Context per sequence; 0 = the model's")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--block-size", e.block_size, "Tokens per KV block")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--kv-type", a.kv_type, "KV cache type: f32, f16, bf16")->capture_default_str();
  app.add_option("--kv-cache-memory", a.kv_cache_memory,
                 "Bytes of the KV pool, e.g. 512MiB (default: see --memory-budget)");
  app.add_option("--memory-budget", a.memory_budget,
                 "Bytes for everything; the KV pool gets what weights, buffers and overhead leave "
                 "(default: room for max-seqs contexts, at most 4 GiB of KV)");
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  // `tally bench` alone is the model benchmark (cmd_bench_model.cpp); `tally bench throughput`
  // the engine's.
  Runner model_bench = add_bench_model_options(app);
  auto args = std::make_shared<BenchArgs>();
  args->engine.model_path = default_model_path();
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
