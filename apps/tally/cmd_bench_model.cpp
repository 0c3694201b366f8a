// tally bench: prefill and decode tokens/s of a model beside the ceilings measured in the same
// run (memory bandwidth for decode, the matmul kernel's peak for prefill). docs/performance.md
// explains how to read the table.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "cli_common.h"
#include "commands.h"
#include "engine/engine_flags.h"
#include "model/model.h"
#include "perf/model_bench.h"
#include "perf/model_bench_report.h"

namespace tally::cli {

namespace {

struct BenchModelArgs {
  std::string model;
  int threads = 0;
  perf::ModelBenchOptions options;
  KvTypeFlags kv_type;
  std::string ceiling = "read";
  int64_t bandwidth_mib = 1024;
  bool json = false;
};

Status apply_named_args(BenchModelArgs& a) {
  if (a.threads < 0)
    return make_error(ErrorCode::kInvalidArgument, "--threads must be >= 0, got {}", a.threads);
  TALLY_ASSIGN_OR_RETURN(a.options.kv_type, kv_type_flags_parse(a.kv_type));
  if (a.ceiling == "read") {
    a.options.ceiling = perf::CeilingBandwidth::kRead;
  } else if (a.ceiling == "triad") {
    a.options.ceiling = perf::CeilingBandwidth::kTriad;
  } else {
    return make_error(ErrorCode::kInvalidArgument, "--ceiling: '{}' is neither read nor triad",
                      a.ceiling);
  }
  if (a.bandwidth_mib < 1)
    return make_error(ErrorCode::kInvalidArgument, "--bandwidth-mib must be >= 1");
  a.options.bandwidth_bytes = static_cast<size_t>(a.bandwidth_mib) << 20;
  return Status::ok_status();
}

int run_bench_model(BenchModelArgs args) {
  if (Status st = apply_named_args(args); !st.ok()) return report_error(st);
  auto model = load_model(args.model);
  if (!model.ok()) return report_error(model.status());
  const ModelConfig& c = (*model)->config();
  if (Status st = perf::validate_model_bench_options(args.options, c); !st.ok())
    return report_error(st);
  ThreadPool pool(args.threads);
  // A line per finished measurement while the run goes on, on a terminal only (quiet in logs).
  std::function<void(const std::string&)> progress;
  if (::isatty(STDERR_FILENO) == 1)
    progress = [](const std::string& line) { fmt::print(stderr, "bench: {}\n", line); };
  auto result = perf::run_model_bench(**model, pool, args.options, progress);
  if (!result.ok()) return report_error(result.status());
  const perf::ModelBenchLabel label{std::filesystem::path(args.model).filename().string(),
                                    std::string(c.arch->name), c.n_layers, c.n_embd};
  if (args.json) {
    fmt::print("{}\n", perf::model_bench_json(*result, label).dump(2));
  } else {
    fmt::print("{}", perf::model_bench_table(*result, label));
  }
  return kExitOk;
}

}  // namespace

Runner add_bench_model_options(CLI::App& bench) {
  auto args = std::make_shared<BenchModelArgs>();
  args->model = default_model_path();
  auto& o = args->options;
  bench.add_option("-m,--model", args->model, "GGUF model file or Hugging Face model directory")->capture_default_str();
  bench.add_option("-t,--threads", args->threads, "Compute threads; 0 = one per core")
      ->capture_default_str();
  bench.add_option("--prompt", o.prompt_lengths, "Prefill tests: prompt lengths, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  bench
      .add_option("--batch", o.batch_sizes,
                  "Decode tests: sequences decoding together, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  bench.add_option("--ubatch", o.ubatch, "Prompt tokens per forward pass (prefill chunk)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench.add_option("--kv-len", o.kv_len, "Positions each decoding sequence already holds")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  kv_type_flags_add(bench, args->kv_type);
  bench
      .add_option("-r,--reps", o.repetitions,
                  "Timed repetitions per figure (the median is reported)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench.add_option("--warmup", o.warmup, "Untimed repetitions before the timed ones")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  bench.add_option("--ceiling", args->ceiling, "Bandwidth the decode ceiling uses: read or triad")
      ->capture_default_str();
  bench
      .add_option("--bandwidth-mib", args->bandwidth_mib,
                  "Footprint of the bandwidth kernels (far above the caches)")
      ->capture_default_str();
  bench.add_flag("--json", args->json, "Print JSON instead of a table");
  return [args] { return run_bench_model(*args); };
}

}  // namespace tally::cli
