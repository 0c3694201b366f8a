// tally quantize IN.gguf OUT.gguf TYPE [--pure] [--output-tensor-type T]
//   [--token-embedding-type T] [--imatrix FILE] [--threads N] [--overwrite]
#include <chrono>

#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "progress_bar.h"
#include "quant/model_quantizer.h"

namespace tally::cli {

namespace {

struct QuantizeArgs {
  quant::QuantizeOptions options;
  std::string output_tensor_type;
  std::string token_embedding_type;
};

int run_quantize(QuantizeArgs args) {
  quant::QuantizeOptions& o = args.options;
  if (!args.output_tensor_type.empty()) {
    auto t = quant::quantize_tensor_type_from_name(args.output_tensor_type);
    if (!t.ok()) return report_error(t.status().with_context("--output-tensor-type"));
    o.output_type = *t;
  }
  if (!args.token_embedding_type.empty()) {
    auto t = quant::quantize_tensor_type_from_name(args.token_embedding_type);
    if (!t.ok()) return report_error(t.status().with_context("--token-embedding-type"));
    o.token_embd_type = *t;
  }
  const auto start = std::chrono::steady_clock::now();
  ProgressBar bar("quantizing " + o.output_path);
  o.on_progress = bar.callback();
  o.on_note = [&bar](std::string_view line) {
    bar.finish();  // a note on its own line, the bar redrawn below it
    fmt::print(stderr, "tally: {}\n", line);
  };
  auto s = quant::quantize_model(o);
  bar.finish();
  if (!s.ok()) return report_error(s.status());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr,
             "tally: wrote {} ({}{}): {} tensors, {} quantized ({} in a fallback type, {} with the importance "
             "matrix), {:.1f} MiB -> {:.1f} MiB in {:.1f} s on {} threads\n",
             o.output_path, s->scheme.llama.name, o.pure ? ", pure" : "", s->n_tensors, s->n_quantized, s->n_fallback,
             s->n_imatrix,
             s->input_bytes / 1048576.0, s->output_bytes / 1048576.0, seconds, s->n_threads);
  return kExitOk;
}

}  // namespace

Runner add_quantize_command(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  quant::QuantizeOptions& o = args->options;
  app.add_option("input", o.input_path, "GGUF model to quantize (f32, f16, bf16; q8_0 is requantized)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("output", o.output_path, "GGUF file to write")->required();
  app.add_option("type", o.type, fmt::format("llama.cpp file type: {}", plan::llama_file_type_names()))->required();
  app.add_flag("--pure", o.pure, "Every matrix in the type's base type (no mix; output and embedding too)");
  app.add_option("--output-tensor-type", args->output_tensor_type, "Type of output.weight (e.g. q8_0, f16)");
  app.add_option("--token-embedding-type", args->token_embedding_type, "Type of token_embd.weight (e.g. q8_0)");
  app.add_option("--imatrix", o.imatrix_path,
                 "Importance matrix (tally imatrix / llama-imatrix, GGUF or .dat): weights each column's error")
      ->check(CLI::ExistingFile);
  app.add_option("--threads", o.n_threads, "Threads converting rows (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--overwrite", o.overwrite, "Replace the output file if it exists");
  return [args] { return run_quantize(*args); };
}

}  // namespace tally::cli
