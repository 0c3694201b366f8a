#include "eval_text.h"

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "cli_common.h"

namespace tally::cli {

Result<EvalText> load_eval_text(std::string_view command, const std::string& model_path,
                                const std::string& text_path, perf::PerplexityOptions& options) {
  std::ifstream in(text_path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "{}: cannot read {}", command, text_path);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  EvalText e;
  TALLY_ASSIGN_OR_RETURN(e.model, load_model(model_path));
  TALLY_ASSIGN_OR_RETURN(e.tokenizer, Tokenizer::from_gguf(e.model->gguf()));
  e.tokens = e.tokenizer->encode(text, /*add_special=*/true, /*parse_special=*/false);
  if (e.tokenizer->add_bos() && e.tokenizer->bos() >= 0) options.bos = e.tokenizer->bos();
  options.on_chunk = [](int64_t done, int64_t, double ppl) { fmt::print(stderr, "[{}]{:.4f},", done, ppl); };
  return e;
}

}  // namespace tally::cli
