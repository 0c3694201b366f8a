// tally perplexity [-m MODEL] -f TEXT [--ctx N] [--threads N]: llama.cpp's perplexity
// (perf/perplexity.h) of a model over a text file.
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "perf/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace tally::cli {

namespace {

struct PerplexityArgs {
  std::string model;
  std::string text_path;
  perf::PerplexityOptions options;
};

int run_perplexity(PerplexityArgs args) {
  std::ifstream in(args.text_path, std::ios::binary);
  if (!in) return report_error(make_error(ErrorCode::kNotFound, "perplexity: cannot read {}", args.text_path));
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  auto model = load_model(args.model);
  if (!model.ok()) return report_error(model.status());
  auto tokenizer = Tokenizer::from_gguf((*model)->gguf());
  if (!tokenizer.ok()) return report_error(tokenizer.status());
  // As llama-perplexity: the whole text tokenized once, with BOS when the model adds one, and
  // each chunk's first token replaced by BOS then.
  const std::vector<int32_t> tokens = (*tokenizer)->encode(text, /*add_special=*/true, /*parse_special=*/false);
  perf::PerplexityOptions o = args.options;
  if ((*tokenizer)->add_bos() && (*tokenizer)->bos() >= 0) o.bos = (*tokenizer)->bos();
  o.on_chunk = [](int64_t done, int64_t, double ppl) { fmt::print(stderr, "[{}]{:.4f},", done, ppl); };
  auto r = perf::perplexity(**model, tokens, o);
  fmt::print(stderr, "\n");
  if (!r.ok()) return report_error(r.status());
  fmt::print("PPL = {:.4f} +/- {:.4f} ({} chunks of {} tokens, {} tokens scored, {} in the text)\n", r->ppl,
             r->ppl_stderr, r->n_chunks, o.n_ctx, r->n_scored, tokens.size());
  return kExitOk;
}

}  // namespace

Runner add_perplexity_command(CLI::App& app) {
  auto args = std::make_shared<PerplexityArgs>();
  args->model = default_model_path();
  app.add_option("-m,--model", args->model, "GGUF model")->capture_default_str();
  app.add_option("-f,--file", args->text_path, "Text to score")->required()->check(CLI::ExistingFile);
  app.add_option("--ctx", args->options.n_ctx, "Tokens per chunk; the second half of each is scored")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("-t,--threads", args->options.n_threads, "Threads (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  return [args] { return run_perplexity(*args); };
}

}  // namespace tally::cli
