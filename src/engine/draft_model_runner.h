// The draft-model source of speculative decoding (--speculative draft --draft-model SMALL.gguf):
// a second, small Model in the same engine process that proposes each speculating sequence's
// draft tokens, autoregressively, before the target verifies them (docs/speculative.md).
//
// KV: the draft model has its own KvStorage with the target's block count, block size and KV
// types, addressed through the target's block tables. A position's draft KV lives in the same
// block id as its target KV, so every allocation, copy-on-write, rollback (truncate), free and
// prefix-cache hit of the target's KvCacheManager applies to the draft's KV at once: there is no
// second allocator whose blocks could leak or drift. For that to hold the draft computes, every
// step, exactly the positions the target computes:
//   pass 0        every scheduled row's own tokens (prefill chunks, decode tokens, the last
//                 known token of a speculating row, and an n-gram row's drafts): the draft's
//                 prefill happens with the target's; logits only at the last known token of
//                 a row the model drafts for -> draft 0
//   pass j = 1..  speculating rows with at least j drafts: draft token j - 1 at its position;
//                 logits while j < n_draft -> draft j (the pass j = n_draft only writes KV,
//                 so that an all-accepted draft leaves no hole in the draft's cache)
// Each pass is one ragged Model::forward over the rows still drafting.
//
// Each row's tokens and block table come from the scheduler's output itself.
// Thread rules: the engine thread alone.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/function_ref.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "model/batch.h"
#include "model/forward_scratch.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "runner/batch_runner.h"
#include "sched/scheduler_output.h"
#include "tokenizer/tokenizer.h"

namespace tally {

struct DraftRunnerConfig {
  int64_t n_blocks = 0;      // the target's pool
  int64_t block_size = 16;   // the target's
  KvTypes kv_type = DType::kF32;
  int64_t max_tokens = 512;  // tokens per step (pass 0 computes as many as the target)
  int64_t max_rows = 64;     // rows per step
  int64_t max_model_len = 512;
  int64_t max_draft = 4;     // draft tokens per row (num_speculative_tokens)
};

// What the draft model adds to the memory ledger.
struct DraftRunnerBytes {
  int64_t weights = 0;  // mapped + owned
  int64_t kv = 0;
  int64_t buffers = 0;  // forward scratch, batch arrays, logits
  int64_t total() const { return weights + kv + buffers; }
};

// One draft pass after the step's first (draft tokens only): its rows and wall time.
struct DraftPassTime {
  int32_t rows = 0;
  double seconds = 0.0;
};

// Picks draft token i of scheduled row `row` from the draft's logits at that position; a
// sampled proposal also writes the distribution q it was drawn from into `q` ([n_vocab]), for
// the target's rejection sampling (draft_q()).
using DraftTokenPicker = FunctionRef<int32_t(size_t row, int32_t i, std::span<const float> logits,
                                             std::span<float> q)>;

class DraftModelRunner {
 public:
  // OK when `draft` has the target's vocabulary: the same token count (tokenizer and logits
  // rows) and the same text for every token; else InvalidArgument naming the first difference.
  static Status check_vocabulary(const Tokenizer& target, const Tokenizer& draft,
                                 int64_t target_logits, int64_t draft_logits,
                                 const std::string& draft_path);
  // Loads config's draft model, checks its vocabulary against the target's and its context
  // against max_model_len, then allocates its KV storage and buffers.
  static Result<std::unique_ptr<DraftModelRunner>> create(const std::string& path,
                                                          const Tokenizer& target_tokenizer,
                                                          const ModelConfig& target,
                                                          const DraftRunnerConfig& config);
  static int64_t buffer_bytes_for(const ModelConfig& draft, const DraftRunnerConfig& config);

  DraftModelRunner(const DraftModelRunner&) = delete;
  DraftModelRunner& operator=(const DraftModelRunner&) = delete;

  // After target.apply(out) (block copies), before target.fill(out): applies out's block
  // copies to the draft's KV, runs the passes above and writes the draft tokens of every row
  // whose drafts are the model's (ScheduledSeq::draft_by_model) into out.draft_tokens. A row
  // with n-gram drafts computes them as known tokens in pass 0.
  Status propose(SchedulerOutput& out, ThreadPool& pool, DraftTokenPicker pick);

  // The q the picker wrote for draft token i of scheduled row `row` this step.
  std::span<const float> draft_q(size_t row, int32_t i) const;

  const ModelConfig& model_config() const { return model_->config(); }
  DraftRunnerBytes bytes() const { return bytes_; }
  // Passes run so far (forward calls), for the tests and the benchmarks.
  int64_t passes() const { return passes_; }
  // The last propose()'s passes after the first: what the model's drafts cost.
  std::span<const DraftPassTime> last_pass_times() const { return pass_times_; }

 private:
  DraftModelRunner(std::unique_ptr<Model> model, const DraftRunnerConfig& config, KvStorage kv);
  // Appends one batch row: positions [first, first + n) with `tokens`; logits at its last
  // position for scheduled row `owner` when `want_logits`.
  void add_row(std::span<const int32_t> block_table, int32_t first,
               std::span<const int32_t> tokens, std::span<const int32_t> more, bool want_logits,
               size_t owner);
  Status run_pass(ThreadPool& pool);

  std::unique_ptr<Model> model_;
  DraftRunnerConfig config_;
  KvStorage kv_;
  ForwardScratch scratch_;
  DraftRunnerBytes bytes_;
  int64_t passes_ = 0;
  // One pass's batch, capacity fixed at creation.
  std::vector<int32_t> tokens_;
  std::vector<int32_t> positions_;
  std::vector<int32_t> seq_index_;
  std::vector<BatchSequence> rows_;
  std::vector<int32_t> logit_rows_;
  std::vector<size_t> logit_owner_;  // scheduled row of each logits row
  std::vector<float> logits_;        // [max_rows][n_vocab]
  std::vector<float> q_;             // [max_rows][max_draft][n_vocab]
  std::vector<DraftPassTime> pass_times_;  // [passes after the first] of the last propose()
  size_t n_tokens_ = 0;
  size_t n_rows_ = 0;
  size_t n_logits_ = 0;
};

}  // namespace tally
