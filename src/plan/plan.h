// The memory ledger's arithmetic without allocating anything: weights + activations +
// overhead + KV cache, per tensor-parallel rank, and what a memory budget leaves for the KV
// cache (blocks, tokens, concurrency, context). `tally plan` prints it; the engine's
// start-up ledger uses the same terms. Every formula is in docs/memory.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "plan/activations.h"
#include "plan/plan_model.h"
#include "plan/run_defaults.h"
#include "plan/weight_format.h"
#include "tensor/dtype.h"

namespace tally::plan {

// Runtime, thread stacks, allocator slack and page tables: reserved per rank before the KV
// cache gets the rest of the budget.
inline constexpr int64_t kDefaultOverheadBytes = int64_t{256} << 20;

struct PlanOptions {
  std::optional<WeightFormat> weights;  // default: weight_format_native(model)
  // Defaults: run_defaults.h, the same as the engine's.
  KvTypes kv_type = kDefaultKvType;     // K and V: f32, f16, bf16, q8_0, q4_0
  int64_t context = kDefaultContext;    // tokens per sequence; 0 = the model's context
  int64_t concurrency = kDefaultMaxSeqs;  // sequences resident at once
  int64_t tp = 1;                       // tensor-parallel ranks
  int64_t block_size = kDefaultBlockSize;     // tokens per KV block
  int64_t batch_tokens = kDefaultBatchTokens;  // most tokens in one forward step
  int64_t draft_tokens = 0;  // speculation: draft tokens per sequence and step (logits rows)
  std::optional<int64_t> budget;        // bytes of memory per rank; none = needs only
  // The host-RAM offload tier below the KV pool (--kv-offload-memory): whole blocks of it.
  int64_t kv_offload_host_bytes = 0;
  int64_t overhead_bytes = kDefaultOverheadBytes;
};

// Weight bytes of one type over the whole model (a mixed file has several).
struct WeightTypeBytes {
  std::string type;
  int64_t n_tensors = 0;
  int64_t n_params = 0;
  int64_t bytes = 0;
};

// The draft model of speculative decoding (--draft-model), run on every rank whole: its
// weights, the buffers of its passes (draft_activation_terms) and its KV, which lives in the
// target's block ids (engine/draft_model_runner.h): every KV block holds the target's bytes
// and the draft's, so the draft's KV per token adds to the pool's block size.
struct DraftPlan {
  std::string name;
  int64_t n_params = 0;
  int64_t weight_bytes = 0;
  std::vector<ActivationTerm> activation_terms;
  int64_t activation_bytes = 0;
  int64_t kv_bytes_per_token = 0;
};

struct Plan {
  PlanModel model;      // without its tensor list
  PlanOptions options;  // resolved: weights and context filled in
  int64_t n_params = 0;

  // Weights.
  std::vector<WeightTypeBytes> weight_types;
  int64_t weight_bytes_model = 0;  // the whole model, unsplit
  int64_t weight_bytes = 0;        // per rank

  // Tensor parallelism (per rank).
  int64_t heads_per_rank = 0;
  int64_t kv_heads_per_rank = 0;
  int64_t ff_per_rank = 0;
  bool kv_replicated = false;  // n_kv_heads < tp: each KV head lives on tp / n_kv_heads ranks

  // Activations of the largest step (per rank): min(batch_tokens, concurrency * context)
  // tokens, as a step never holds more tokens than the resident sequences.
  int64_t step_tokens = 0;
  std::vector<ActivationTerm> activation_terms;
  int64_t activation_bytes = 0;
  int64_t overhead_bytes = 0;

  // KV cache (per rank unless said otherwise).
  int64_t kv_bytes_per_token = 0;
  int64_t kv_bytes_per_token_all_ranks = 0;
  int64_t kv_block_bytes = 0;        // block_size tokens of the target's KV
  // What one pool block costs: kv_block_bytes plus the draft model's KV for the same
  // tokens (= kv_block_bytes without a draft model). Blocks are counted in these.
  int64_t pool_block_bytes = 0;
  int64_t blocks_per_sequence = 0;   // ceil(context / block_size); capped by the model's
                                     // kv_window when every layer has one
  int64_t kv_bytes_requested = 0;    // concurrency whole sequences of `context` tokens (pool blocks)
  // The host offload tier: floor(kv_offload_host_bytes / (block bytes + block_size token
  // ids)) blocks of that size (the engine's KvOffload::host_blocks_for, checked equal).
  int64_t kv_offload_bytes = 0;
  int64_t required_bytes = 0;        // weights + activations + overhead + offload + kv requested

  // Against the budget (when options.budget is set).
  bool has_budget = false;
  int64_t budget_bytes = 0;
  bool model_fits = false;          // weights + activations + overhead <= budget
  int64_t shortfall_bytes = 0;      // how much more the model needs when it does not fit
  int64_t kv_budget_bytes = 0;      // budget - weights - activations - overhead, >= 0
  int64_t n_blocks = 0;             // floor(kv budget / block bytes)
  int64_t token_capacity = 0;       // n_blocks * block_size
  int64_t max_concurrency = 0;      // sequences of `context` tokens that fit
  int64_t max_context = 0;          // tokens per sequence at `concurrency` (<= model context)
  bool fits = false;                // model fits and the requested KV fits

  std::optional<DraftPlan> draft;   // with a draft model

  std::vector<std::string> notes;   // approximations and replications worth knowing
};

// InvalidArgument for options that cannot be planned (tp not dividing the heads, a zero
// block size, weights "file" for a model without a file, ...). A budget too small is not an
// error: it is a Plan with model_fits == false. With `draft` (a draft model for speculative
// decoding, tp 1; check_draft_model says whether it can draft for `model`) its weights,
// buffers and KV are counted too.
Result<Plan> compute_plan(const PlanModel& model, const PlanOptions& options,
                          const PlanModel* draft = nullptr);

// What `tally plan` can tell of a draft model before the engine loads it (which checks every
// token's text): InvalidArgument for another vocabulary size, or a trained context shorter
// than `context` (0 = the target's).
Status check_draft_model(const PlanModel& target, const PlanModel& draft, int64_t context);

}  // namespace tally::plan
