// KL divergence of a model's next-token distributions against a base model's, over the rows
// `tally perplexity` scores (perplexity.h), as llama-perplexity's --kl-divergence-base /
// --kl-divergence do:
//   KldBaseWriter   --kl-divergence-base FILE (first run, the base model): writes the scored
//                   rows' log-probabilities (f32, [rows][n_vocab]) after a header with the
//                   vocabulary size, the context and the text's tokens
//   KldComparer     --kl-divergence (then, the quantized model): reads them back row by row
//                   and accumulates, per row, KL(base || model), whether the top token agrees,
//                   and the change in the probability of the true next token
// The file is tally's own (not llama.cpp's uint16 format); it takes n_rows x n_vocab x 4
// bytes. The comparer refuses a file made with another context, vocabulary or text.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace tally::perf {

struct KldHeader {
  int64_t n_vocab = 0;
  int64_t n_ctx = 0;
  std::vector<int32_t> tokens;  // the whole tokenized text
};

class KldBaseWriter {
 public:
  static Result<std::unique_ptr<KldBaseWriter>> create(const std::string& path, const KldHeader& header);
  ~KldBaseWriter();
  Status add_row(std::span<const float> logits);
  Status finish();  // flushes and closes (and removes the file on a failed write)

 private:
  KldBaseWriter(std::FILE* f, std::string path) : file_(f), path_(std::move(path)) {}
  std::FILE* file_;
  std::string path_;
  std::vector<float> log_probs_;
};

struct KldSummary {
  int64_t n_rows = 0;
  double mean_kld = 0.0, kld_stderr = 0.0;
  double same_top_pct = 0.0, same_top_stderr = 0.0;  // percent of rows whose argmax agrees
  double base_ppl = 0.0;                              // from the base's log-probabilities
  double rms_dp_pct = 0.0;  // RMS of p_model - p_base of the true next token, in percent
};

class KldComparer {
 public:
  // Opens `path` and checks it was made for this vocabulary, context and text.
  static Result<std::unique_ptr<KldComparer>> open(const std::string& path, const KldHeader& expect);
  ~KldComparer();
  Status add_row(std::span<const float> logits, int32_t target);
  Result<KldSummary> summary() const;

 private:
  explicit KldComparer(std::FILE* f, int64_t n_vocab) : file_(f), base_(static_cast<size_t>(n_vocab)) {}
  std::FILE* file_;
  std::vector<float> base_;
  std::vector<float> log_probs_;
  int64_t n_rows_ = 0;
  double kld_ = 0.0, kld2_ = 0.0, same_top_ = 0.0, base_nll_ = 0.0, dp2_ = 0.0;
};

}  // namespace tally::perf
