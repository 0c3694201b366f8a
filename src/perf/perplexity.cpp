#include "perf/perplexity.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/thread_pool.h"
#include "model/batch.h"
#include "model/forward_scratch.h"
#include "model/kv_storage.h"

namespace tally::perf {

namespace {

constexpr int64_t kPerplexityBlockSize = 16;

// -log softmax(logits)[target], in double.
double token_nll(const float* logits, int64_t n_vocab, int32_t target) {
  const float max = *std::max_element(logits, logits + n_vocab);
  double sum = 0.0;
  for (int64_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  return std::log(sum) - (static_cast<double>(logits[target]) - max);
}

}  // namespace

Result<PerplexityResult> perplexity(const Model& model, std::span<const int32_t> tokens,
                                    const PerplexityOptions& o) {
  const int64_t n_ctx = o.n_ctx;
  if (n_ctx < 4) return make_error(ErrorCode::kInvalidArgument, "perplexity: context {} is below 4 tokens", n_ctx);
  const auto n_tokens = static_cast<int64_t>(tokens.size());
  int64_t n_chunks = n_tokens / n_ctx;
  if (n_chunks == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "perplexity: the text has {} tokens, fewer than one chunk of {} (use a longer text or a "
                      "smaller --ctx)",
                      n_tokens, n_ctx);
  }
  if (o.max_chunks > 0) n_chunks = std::min(n_chunks, o.max_chunks);
  const ModelConfig& config = model.config();
  const int64_t n_blocks = (n_ctx + kPerplexityBlockSize - 1) / kPerplexityBlockSize;
  KvStorageShape shape = KvStorageShape::for_model(config, n_blocks, kPerplexityBlockSize, o.kv_type);
  TALLY_ASSIGN_OR_RETURN(KvStorage kv, KvStorage::create(shape));
  ForwardScratch scratch(config, n_ctx);
  ThreadPool pool(o.n_threads);

  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  std::iota(table.begin(), table.end(), 0);
  const std::vector<BatchSequence> seqs = {{table}};
  std::vector<int32_t> positions(static_cast<size_t>(n_ctx)), seq_index(static_cast<size_t>(n_ctx), 0);
  std::iota(positions.begin(), positions.end(), 0);
  const int64_t first = n_ctx / 2;  // the first scored row: it predicts token first + 1
  std::vector<int32_t> rows(static_cast<size_t>(n_ctx - 1 - first));
  std::iota(rows.begin(), rows.end(), static_cast<int32_t>(first));
  std::vector<float> logits(rows.size() * static_cast<size_t>(config.n_vocab));
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));

  PerplexityResult r;
  double nll = 0.0, nll2 = 0.0;
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::copy_n(tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
    if (o.bos) chunk[0] = *o.bos;
    const Batch batch{chunk, positions, seq_index, seqs, rows};
    TALLY_RETURN_IF_ERROR(model.forward(batch, kv, scratch, pool, logits.data(), o.observer));
    for (size_t k = 0; k < rows.size(); ++k) {
      const float* row = logits.data() + k * config.n_vocab;
      if (o.on_row) TALLY_RETURN_IF_ERROR(o.on_row({row, static_cast<size_t>(config.n_vocab)}, chunk[rows[k] + 1]));
      const double v = token_nll(row, config.n_vocab, chunk[rows[k] + 1]);
      nll += v;
      nll2 += v * v;
    }
    r.n_scored += static_cast<int64_t>(rows.size());
    r.n_chunks = c + 1;
    if (o.on_chunk) o.on_chunk(c + 1, n_chunks, std::exp(nll / static_cast<double>(r.n_scored)));
  }
  const auto n = static_cast<double>(r.n_scored);
  r.mean_nll = nll / n;
  r.ppl = std::exp(r.mean_nll);
  const double var = nll2 / n - r.mean_nll * r.mean_nll;
  r.ppl_stderr = n > 1 && var > 0 ? r.ppl * std::sqrt(var / (n - 1)) : 0.0;
  return r;
}

}  // namespace tally::perf
