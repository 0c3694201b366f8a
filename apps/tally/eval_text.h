// What `tally perplexity` and `tally imatrix` evaluate: a model and a text file tokenized as
// llama-perplexity does (the whole text at once, with BOS when the model adds one, which then
// replaces each chunk's first token), with progress printed per chunk.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "perf/perplexity.h"
#include "tokenizer/tokenizer.h"

namespace tally::cli {

struct EvalText {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<int32_t> tokens;
};

// Loads both and sets `options`' bos and per-chunk progress; `command` prefixes a read error.
Result<EvalText> load_eval_text(std::string_view command, const std::string& model_path,
                                const std::string& text_path, perf::PerplexityOptions& options);

}  // namespace tally::cli
