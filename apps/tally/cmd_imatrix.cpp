// tally imatrix [-m MODEL] -f TEXT [-o FILE] [--ctx N] [--chunks N] [--threads N]
//   [--process-output]: the importance matrix of a model over calibration text
// (perf/imatrix_collector.h), written in llama.cpp's GGUF imatrix format (or its legacy
// format for a .dat path; io/imatrix_file.h). The text is evaluated as `tally perplexity`
// does (chunks of --ctx tokens from an empty cache), and that perplexity is printed too.
#include <filesystem>

#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "eval_text.h"
#include "perf/imatrix_collector.h"
#include "perf/perplexity.h"

namespace tally::cli {

namespace {

struct ImatrixArgs {
  std::string model;
  std::string text_path;
  std::string output = "imatrix.gguf";
  bool process_output = false;
  perf::PerplexityOptions options;
};

int run_imatrix(ImatrixArgs args) {
  perf::PerplexityOptions o = args.options;
  auto eval = load_eval_text("imatrix", args.model, args.text_path, o);
  if (!eval.ok()) return report_error(eval.status());
  const std::unique_ptr<Model>& model = eval->model;
  const std::vector<int32_t>& tokens = eval->tokens;
  perf::ImatrixCollector collector(*model, args.process_output);
  o.observer = &collector;
  auto r = perf::perplexity(*model, tokens, o);
  fmt::print(stderr, "\n");
  if (!r.ok()) return report_error(r.status().with_context("imatrix"));
  const io::Imatrix m = collector.result({std::filesystem::path(args.text_path).filename().string()},
                                         static_cast<uint32_t>(r->n_chunks), static_cast<uint32_t>(o.n_ctx));
  if (Status st = io::imatrix_write(m, args.output); !st.ok()) return report_error(st);
  fmt::print("PPL = {:.4f} +/- {:.4f} ({} chunks of {} tokens)\n", r->ppl, r->ppl_stderr, r->n_chunks, o.n_ctx);
  fmt::print(stderr, "tally: wrote the importance matrix of {} matrices over {} tokens to {}\n", m.entries.size(),
             r->n_chunks * o.n_ctx, args.output);
  return kExitOk;
}

}  // namespace

Runner add_imatrix_command(CLI::App& app) {
  auto args = std::make_shared<ImatrixArgs>();
  args->model = default_model_path();
  args->options.n_ctx = 512;
  app.add_option("-m,--model", args->model, "GGUF model")->capture_default_str();
  app.add_option("-f,--file", args->text_path, "Calibration text")->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output", args->output, "File to write (llama.cpp's GGUF imatrix; legacy format if *.dat)")
      ->capture_default_str();
  app.add_option("--ctx", args->options.n_ctx, "Tokens per chunk")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--chunks", args->options.max_chunks, "Chunks to evaluate at most (0 = the whole text)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-t,--threads", args->options.n_threads, "Threads (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--process-output", args->process_output, "Collect output.weight too (llama-imatrix's flag)");
  return [args] { return run_imatrix(*args); };
}

}  // namespace tally::cli
