// tally convert --llama2c CHECKPOINT --tokenizer TOK.bin -o OUT.gguf
// tally convert --synthetic PRESET [--type TYPE] [--seed N] [--vocab-from GGUF] -o OUT.gguf
// tally convert --hf DIR [--type TYPE] -o OUT.gguf (convert_hf.cpp)
#include <sys/stat.h>

#include <chrono>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_common.h"
#include "progress_bar.h"
#include "commands.h"
#include "convert_hf.h"
#include "io/llama2c.h"
#include "plan/plan_presets.h"
#include "synth/synthetic_model.h"

namespace tally::cli {

namespace {

struct ConvertFlags {
  io::Llama2cConvertOptions llama2c;
  synth::SyntheticOptions synthetic;
  std::string hf_dir;
  std::string output_path;
};

// ../shared/models/ggml-vocab/<file> beside this checkout, where the vocab GGUFs live.
Result<std::string> default_vocab_path(const std::string& preset) {
  TALLY_ASSIGN_OR_RETURN(const synth::SyntheticModelSpec spec, synth::synthetic_model_spec(preset));
  const std::string path = fmt::format("{}/../shared/models/ggml-vocab/{}", TALLY_SOURCE_DIR, spec.default_vocab);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return make_error(ErrorCode::kNotFound, "convert: default vocab {} not found; pass --vocab-from GGUF", path);
  }
  return path;
}

int run_synthetic(synth::SyntheticOptions o) {
  if (o.vocab_gguf.empty()) {
    auto path = default_vocab_path(o.preset);
    if (!path.ok()) return report_error(path.status());
    o.vocab_gguf = *path;
  }
  const auto start = std::chrono::steady_clock::now();
  ProgressBar bar("writing " + o.output_path);
  o.on_progress = bar.callback();
  auto s = synth::write_synthetic_model(o);
  bar.finish();
  if (!s.ok()) return report_error(s.status());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "tally: wrote {} ({}, {}, seed {}): {} tensors, {:.3f} B parameters, {:.1f} MiB in {:.1f} s on {} threads\n",
             o.output_path, s->model_name, s->scheme.name, o.seed, s->n_tensors, s->n_params / 1e9,
             s->file_bytes / 1048576.0, seconds, s->n_threads);
  fmt::print(stderr, "tally: tokenizer from {}: {} tokens{}\n", o.vocab_gguf, s->n_file_tokens,
             s->n_placeholder_tokens
                 ? fmt::format(" + {} placeholders up to {} (a stand-in, not the model's real tokenizer)",
                               s->n_placeholder_tokens, s->n_vocab)
                 : std::string());
  return kExitOk;
}

}  // namespace

Runner add_convert_command(CLI::App& app) {
  auto f = std::make_shared<ConvertFlags>();
  auto* llama2c = app.add_option("--llama2c", f->llama2c.checkpoint_path, "llama2.c checkpoint (.bin, legacy v0 layout)")
                      ->check(CLI::ExistingFile);
  auto* tokenizer = app.add_option("--tokenizer", f->llama2c.tokenizer_path,
                                   "llama2.c tokenizer (tokenizer.bin / tok512.bin), with --llama2c")
                        ->check(CLI::ExistingFile);
  auto* synthetic = app.add_option("--synthetic", f->synthetic.preset,
                                   fmt::format("Write seeded random weights in the shapes of a preset ({})",
                                               fmt::join(plan::plan_preset_names(), ", ")));
  auto* hf = app.add_option("--hf", f->hf_dir,
                            "Hugging Face model directory (config.json, *.safetensors, tokenizer.json) to write as GGUF")
                 ->check(CLI::ExistingDirectory);
  auto* type = app.add_option("--type", f->synthetic.type,
                              fmt::format("Weight type with --synthetic or --hf, a llama.cpp file type with its per-tensor mix: {} (q3_k, q4_k, q5_k = the _m types); --hf defaults to auto (each tensor's own f32/f16/bf16)",
                                          fmt::join(quant::quant_scheme_names(), ", ")))
                   ->capture_default_str();
  auto* seed = app.add_option("--seed", f->synthetic.seed, "Seed of the synthetic weights")->capture_default_str();
  auto* vocab = app.add_option("--vocab-from", f->synthetic.vocab_gguf,
                               "GGUF whose tokenizer is copied (default: the preset's ggml-vocab file in ../shared/models)")
                    ->check(CLI::ExistingFile);
  auto* threads = app.add_option("--threads", f->synthetic.n_threads, "Threads generating --synthetic weights (0 = all)")
                      ->check(CLI::NonNegativeNumber)
                      ->capture_default_str();
  app.add_option("-o,--output", f->output_path, "GGUF file to write")->required();
  // Checked here rather than with CLI11's needs/excludes, which would clutter --help.
  const std::vector<CLI::Option*> synthetic_only = {seed, vocab, threads};
  return [f, llama2c, tokenizer, synthetic, hf, type, synthetic_only] {
    auto usage = [](std::string msg) { return report_error(Status(ErrorCode::kInvalidArgument, std::move(msg))); };
    if ((llama2c->count() > 0) + (synthetic->count() > 0) + (hf->count() > 0) != 1)
      return usage("convert: give one of --llama2c, --synthetic or --hf");
    if ((llama2c->count() > 0) != (tokenizer->count() > 0)) return usage("convert: --llama2c needs --tokenizer (and only it)");
    for (const CLI::Option* opt : synthetic_only) {
      if (opt->count() > 0 && synthetic->count() == 0)
        return usage(fmt::format("convert: {} only applies to --synthetic", opt->get_name()));
    }
    if (type->count() > 0 && llama2c->count() > 0) return usage("convert: --type applies to --synthetic and --hf");
    if (hf->count() > 0)
      return run_convert_hf(f->hf_dir, type->count() > 0 ? f->synthetic.type : "auto", f->output_path);
    if (synthetic->count() > 0) {
      synth::SyntheticOptions o = f->synthetic;
      o.output_path = f->output_path;
      return run_synthetic(std::move(o));
    }
    io::Llama2cConvertOptions o = f->llama2c;
    o.output_path = f->output_path;
    Status st = io::convert_llama2c(o);
    if (!st.ok()) return report_error(st);
    fmt::print(stderr, "tally: wrote {}\n", o.output_path);
    return kExitOk;
  };
}

}  // namespace tally::cli
