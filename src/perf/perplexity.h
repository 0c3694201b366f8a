// Perplexity by llama.cpp's method (llama-perplexity): the tokens are cut into chunks of
// n_ctx; each chunk is evaluated from an empty cache, with its first token replaced by BOS
// (when the model has one), and only the second half of it is scored: the log-probability of
// tokens[j + 1] from the logits at j, for j in [n_ctx/2, n_ctx - 1). So every scored token
// sees at least n_ctx/2 tokens of context. PPL = exp(mean NLL); its uncertainty is llama.cpp's
// too: the standard error of the mean NLL, times PPL.
//
// Each chunk is one forward call of n_ctx tokens, and the logits are reduced in a fixed order
// (double sums), so the figure is the same for any thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "base/status.h"
#include "model/model.h"
#include "tensor/dtype.h"
#include "tensor/kv_types.h"

namespace tally::perf {

struct PerplexityOptions {
  int64_t n_ctx = 512;
  int n_threads = 0;                  // 0 = one per hardware thread
  KvTypes kv_type = DType::kF32;       // the KV cache (tally perplexity --kv-type)
  std::optional<int32_t> bos;         // the token that replaces each chunk's first
  int64_t max_chunks = 0;             // 0 = every whole chunk of the text
  MatmulObserver* observer = nullptr;  // sees every product's input (tally imatrix)
  // After each chunk: chunks done, of the total, and the perplexity so far.
  std::function<void(int64_t done, int64_t total, double ppl)> on_chunk;
  // Each scored row in order: its logits [n_vocab] and the token they should predict (KL
  // divergence, kl_divergence.h). An error stops the run.
  std::function<Status(std::span<const float> logits, int32_t target)> on_row;
};

struct PerplexityResult {
  int64_t n_chunks = 0;
  int64_t n_scored = 0;   // tokens whose probability was scored
  double mean_nll = 0.0;  // nats per token
  double ppl = 0.0;
  double ppl_stderr = 0.0;
};

// InvalidArgument when n_ctx is below 4 or the tokens do not fill one chunk.
Result<PerplexityResult> perplexity(const Model& model, std::span<const int32_t> tokens,
                                    const PerplexityOptions& options);

}  // namespace tally::perf
