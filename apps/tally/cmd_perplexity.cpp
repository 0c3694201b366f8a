// tally perplexity [-m MODEL] -f TEXT [--ctx N] [--threads N] [--kv-type T]
//   [--kl-divergence-base FILE [--kl-divergence]]: llama.cpp's perplexity (perf/perplexity.h)
// of a model over a text file, and the KL divergence against a base model's saved
// distributions (perf/kl_divergence.h): of a quantized model, or of a quantized KV cache
// (--kv-type) against the f32 one.

#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "engine/engine_flags.h"
#include "eval_text.h"
#include "perf/kl_divergence.h"
#include "perf/perplexity.h"

namespace tally::cli {

namespace {

struct PerplexityArgs {
  std::string model;
  std::string text_path;
  std::string kld_base;  // --kl-divergence-base
  bool kld = false;      // --kl-divergence: compare against kld_base instead of writing it
  KvTypeFlags kv_type;   // f32 by default (set below): what a quantized cache is scored against
  perf::PerplexityOptions options;
};

void print_kld(const perf::KldSummary& k, double ppl) {
  fmt::print("Mean KLD = {:.6f} +/- {:.6f}\n", k.mean_kld, k.kld_stderr);
  fmt::print("Same top = {:.3f} % +/- {:.3f} %\n", k.same_top_pct, k.same_top_stderr);
  fmt::print("PPL(base) = {:.4f}, delta PPL = {:+.4f}\n", k.base_ppl, ppl - k.base_ppl);
  fmt::print("RMS delta p = {:.3f} %\n", k.rms_dp_pct);
}

int run_perplexity(PerplexityArgs args) {
  // As llama-perplexity: the whole text tokenized once, with BOS when the model adds one, and
  // each chunk's first token replaced by BOS then (eval_text.h).
  perf::PerplexityOptions o = args.options;
  auto kv_type = kv_type_flags_parse(args.kv_type);
  if (!kv_type.ok()) return report_error(kv_type.status());
  o.kv_type = *kv_type;
  auto eval = load_eval_text("perplexity", args.model, args.text_path, o);
  if (!eval.ok()) return report_error(eval.status());
  const std::unique_ptr<Model>& model = eval->model;
  const std::vector<int32_t>& tokens = eval->tokens;
  const perf::KldHeader header{model->config().n_vocab, o.n_ctx, tokens};
  std::unique_ptr<perf::KldBaseWriter> base;
  std::unique_ptr<perf::KldComparer> compare;
  if (args.kld) {
    auto c = perf::KldComparer::open(args.kld_base, header);
    if (!c.ok()) return report_error(c.status());
    compare = std::move(*c);
    o.on_row = [&compare](std::span<const float> logits, int32_t target) { return compare->add_row(logits, target); };
  } else if (!args.kld_base.empty()) {
    auto w = perf::KldBaseWriter::create(args.kld_base, header);
    if (!w.ok()) return report_error(w.status());
    base = std::move(*w);
    o.on_row = [&base](std::span<const float> logits, int32_t) { return base->add_row(logits); };
  }
  auto r = perf::perplexity(*model, tokens, o);
  fmt::print(stderr, "\n");
  if (!r.ok()) return report_error(r.status());
  fmt::print("PPL = {:.4f} +/- {:.4f} ({} chunks of {} tokens, {} tokens scored, {} in the text)\n", r->ppl,
             r->ppl_stderr, r->n_chunks, o.n_ctx, r->n_scored, tokens.size());
  if (base) {
    if (Status st = base->finish(); !st.ok()) return report_error(st);
    fmt::print(stderr, "tally: saved the base distributions of {} rows in {}\n", r->n_scored, args.kld_base);
  }
  if (compare) {
    auto k = compare->summary();
    if (!k.ok()) return report_error(k.status());
    print_kld(*k, r->ppl);
  }
  return kExitOk;
}

}  // namespace

Runner add_perplexity_command(CLI::App& app) {
  auto args = std::make_shared<PerplexityArgs>();
  args->model = default_model_path();
  app.add_option("-m,--model", args->model, "GGUF model file or Hugging Face model directory")->capture_default_str();
  app.add_option("-f,--file", args->text_path, "Text to score")->required()->check(CLI::ExistingFile);
  app.add_option("--ctx", args->options.n_ctx, "Tokens per chunk; the second half of each is scored")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("-t,--threads", args->options.n_threads, "Threads (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  args->kv_type.both = "f32";
  kv_type_flags_add(app, args->kv_type);
  app.add_option("--kl-divergence-base", args->kld_base,
                 "File of the base model's distributions: written by this run, or read with --kl-divergence");
  app.add_flag("--kl-divergence", args->kld,
               "Compare against --kl-divergence-base: mean KLD, same top token, delta PPL, RMS delta p");
  return [args] {
    if (args->kld && args->kld_base.empty())
      return report_error(make_error(ErrorCode::kInvalidArgument, "perplexity: --kl-divergence needs --kl-divergence-base FILE"));
    return run_perplexity(*args);
  };
}

}  // namespace tally::cli
