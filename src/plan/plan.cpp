#include "plan/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/ascii.h"

namespace tally::plan {

namespace {

// Bounds far above real use; they keep every product of the ledger inside int64.
constexpr int64_t kMaxContext = int64_t{1} << 30;
constexpr int64_t kMaxConcurrency = int64_t{1} << 20;
constexpr int64_t kMaxBatchTokens = int64_t{1} << 24;
constexpr int64_t kMaxBlockSize = int64_t{1} << 16;
constexpr int64_t kMaxTp = int64_t{1} << 10;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Status check_range(const char* what, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi)
    return make_error(ErrorCode::kInvalidArgument, "{} is {} (must be in [{}, {}])", what, value,
                      lo, hi);
  return Status::ok_status();
}

Status validate_options(const PlanModel& m, const PlanOptions& o) {
  TALLY_RETURN_IF_ERROR(check_range("context", o.context, 0, kMaxContext));
  TALLY_RETURN_IF_ERROR(check_range("concurrency", o.concurrency, 1, kMaxConcurrency));
  TALLY_RETURN_IF_ERROR(check_range("tensor-parallel degree", o.tp, 1, kMaxTp));
  TALLY_RETURN_IF_ERROR(check_range("block size", o.block_size, 1, kMaxBlockSize));
  TALLY_RETURN_IF_ERROR(check_range("batch tokens", o.batch_tokens, 1, kMaxBatchTokens));
  TALLY_RETURN_IF_ERROR(check_range("overhead bytes", o.overhead_bytes, 0, INT64_MAX / 4));
  TALLY_RETURN_IF_ERROR(
      check_range("kv offload host bytes", o.kv_offload_host_bytes, 0, INT64_MAX / 4));
  if (o.budget) TALLY_RETURN_IF_ERROR(check_range("memory budget", *o.budget, 0, INT64_MAX / 4));
  TALLY_RETURN_IF_ERROR(kv_types_supported(o.kv_type));
  if (o.weights && o.weights->from_file && !m.has_file_bytes())
    return make_error(ErrorCode::kInvalidArgument,
                      "weights 'file' needs a GGUF model; '{}' comes from a {}", m.name, m.source);
  const int64_t tp = o.tp;
  if (m.n_heads % tp != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "tensor-parallel degree {} does not divide the {} attention heads", tp,
                      m.n_heads);
  if (m.n_kv_heads % tp != 0 && tp % m.n_kv_heads != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "tensor-parallel degree {} and the {} KV heads: one must divide the other",
                      tp, m.n_kv_heads);
  if (m.n_ff % tp != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "tensor-parallel degree {} does not divide the ffn width {}", tp, m.n_ff);
  return Status::ok_status();
}

// The share of a tensor one rank holds, as num/den of its rows or columns. Attention is
// split by heads, the ffn by its width, the vocabulary by rows (the last rank may hold
// fewer: ceil); norms and unknown tensors are whole on every rank.
struct Share {
  int64_t num = 1;
  int64_t den = 1;
};

Share rank_share(TensorRole role, const PlanModel& m, const Plan& p) {
  const int64_t tp = p.options.tp;
  switch (role) {
    case TensorRole::kTokenEmbd:
    case TensorRole::kOutput: return {ceil_div(m.n_vocab, tp), m.n_vocab};
    case TensorRole::kAttnQ:
    case TensorRole::kBiasQ:
    case TensorRole::kAttnOut: return {p.heads_per_rank, m.n_heads};
    case TensorRole::kAttnK:
    case TensorRole::kAttnV:
    case TensorRole::kBiasK:
    case TensorRole::kBiasV: return {p.kv_heads_per_rank, m.n_kv_heads};
    case TensorRole::kFfnGate:
    case TensorRole::kFfnUp:
    case TensorRole::kFfnDown: return {1, tp};
    case TensorRole::kNorm:
    case TensorRole::kOther: return {1, 1};
  }
  return {1, 1};
}

void add_weights(const PlanModel& m, const WeightFormat& format, Plan& p) {
  int64_t n_fallback = 0;
  for (const auto& t : m.tensors) {
    const int64_t bytes = weight_format_tensor_bytes(format, t, m);
    std::string type;
    if (format.from_file) {
      type = std::string(dtype_name(*t.file_type));
    } else {
      const LlamaTensorType chosen = llama_quant_tensor_type(format.file_type, t, m);
      type = std::string(dtype_name(chosen.type));
      if (chosen.type != chosen.wanted) ++n_fallback;
    }
    auto it = std::find_if(p.weight_types.begin(), p.weight_types.end(),
                           [&](const WeightTypeBytes& w) { return w.type == type; });
    if (it == p.weight_types.end()) {
      p.weight_types.emplace_back();
      p.weight_types.back().type = type;
      it = p.weight_types.end() - 1;
    }
    it->n_tensors += 1;
    it->n_params += t.n_elements();
    it->bytes += bytes;
    p.weight_bytes_model += bytes;
    const Share share = rank_share(t.role, m, p);
    p.weight_bytes += static_cast<int64_t>(
        (static_cast<__int128>(bytes) * share.num + share.den - 1) / share.den);
  }
  std::stable_sort(p.weight_types.begin(), p.weight_types.end(),
                   [](const WeightTypeBytes& a, const WeightTypeBytes& b) {
                     return a.bytes > b.bytes;
                   });
  if (!format.from_file && llama_file_type_is_quantized(format.file_type))
    p.notes.push_back(fmt::format(
        "{} gives each tensor llama-quantize's type (most matrices {}; the output and some "
        "attn_v/ffn_down/attn_output more bits), as `tally quantize` writes it",
        format.name, dtype_name(format.base)));
  if (n_fallback > 0)
    p.notes.push_back(fmt::format(
        "{} matrices have rows that do not fill whole blocks of their type: counted in llama.cpp's "
        "fallback type for them (q4_K -> q5_0, q6_K -> q8_0, ...; f16 when none fits)",
        n_fallback));
  if (!format.from_file && m.has_file_bytes())
    p.notes.push_back(fmt::format("weights planned as {}, not as the file stores them",
                                  format.name));
}

void add_parallel_split(const PlanModel& m, Plan& p) {
  const int64_t tp = p.options.tp;
  p.heads_per_rank = m.n_heads / tp;
  p.ff_per_rank = m.n_ff / tp;
  p.kv_replicated = m.n_kv_heads < tp;
  p.kv_heads_per_rank = p.kv_replicated ? 1 : m.n_kv_heads / tp;
  if (p.kv_replicated)
    p.notes.push_back(fmt::format(
        "{} KV heads over {} ranks: each KV head is replicated on {} ranks (1 per rank)",
        m.n_kv_heads, tp, tp / m.n_kv_heads));
}

void add_activations(const PlanModel& m, Plan& p) {
  const PlanOptions& o = p.options;
  p.step_tokens = std::min(o.batch_tokens, o.concurrency * o.context);
  ActivationShape s;
  s.n_tokens = p.step_tokens;
  s.n_rows = std::min(p.step_tokens, o.concurrency);
  s.n_logit_rows = std::min(s.n_rows * (1 + o.draft_tokens), p.step_tokens);
  s.n_seqs = o.concurrency;
  s.context = o.context;
  s.blocks_per_seq = ceil_div(p.options.context, p.options.block_size);  // the runner's table
                                                                        // width (windows too)
  s.n_embd = m.n_embd;
  s.n_heads = p.heads_per_rank;
  s.n_kv_heads = p.kv_heads_per_rank;
  s.head_dim = m.head_dim;
  s.rope_dim = m.rope_dim > 0 ? m.rope_dim : m.head_dim;
  s.n_ff = m.n_expert > 0 ? m.ffn_hidden_width() / p.options.tp : p.ff_per_rank;
  s.n_vocab = m.n_vocab;
  s.n_expert = m.n_expert;
  s.n_expert_used = m.n_expert_used;
  p.activation_terms = activation_terms(s);
  p.activation_bytes = activation_bytes(p.activation_terms);
}

Status add_kv(const PlanModel& m, Plan& p) {
  const PlanOptions& o = p.options;
  TALLY_RETURN_IF_ERROR(kv_types_check_shape(o.kv_type, p.kv_heads_per_rank, m.head_dim));
  // K and V, every layer, the KV heads this rank holds (KvStorageShape::bytes_per_token).
  p.kv_bytes_per_token = m.n_layers * kv_types_row_bytes(o.kv_type, p.kv_heads_per_rank, m.head_dim);
  p.kv_bytes_per_token_all_ranks = p.kv_bytes_per_token * o.tp;
  p.kv_block_bytes = o.block_size * p.kv_bytes_per_token;
  p.pool_block_bytes = o.block_size * (p.kv_bytes_per_token + (p.draft ? p.draft->kv_bytes_per_token : 0));
  p.blocks_per_sequence = ceil_div(o.context, o.block_size);
  if (m.kv_window > 0) {
    // Blocks behind the window are dropped (kv/kv_cache_manager.h): a sequence holds those from
    // its window's first position through the last token of its step (a prefill chunk of up
    // to batch_tokens), one more where the window starts mid-block.
    const int64_t step = std::min(o.batch_tokens, o.context);
    p.blocks_per_sequence = std::min(p.blocks_per_sequence, ceil_div(m.kv_window - 1 + step, o.block_size) + 1);
  }
  const __int128 requested =
      static_cast<__int128>(o.concurrency) * p.blocks_per_sequence * p.pool_block_bytes;
  if (requested > INT64_MAX / 4)
    return make_error(ErrorCode::kInvalidArgument,
                      "KV cache for {} sequences of {} tokens is beyond any memory", o.concurrency,
                      o.context);
  p.kv_bytes_requested = static_cast<int64_t>(requested);
  return Status::ok_status();
}

void add_capacity(const PlanModel& m, Plan& p) {
  const PlanOptions& o = p.options;
  const int64_t offload_entry = p.kv_block_bytes + o.block_size * int64_t{sizeof(int32_t)};
  p.kv_offload_bytes = o.kv_offload_host_bytes / offload_entry * offload_entry;
  int64_t fixed = p.weight_bytes + p.activation_bytes + p.overhead_bytes + p.kv_offload_bytes;
  if (p.draft) fixed += p.draft->weight_bytes + p.draft->activation_bytes;
  p.required_bytes = fixed + p.kv_bytes_requested;
  if (!o.budget) return;
  p.has_budget = true;
  p.budget_bytes = *o.budget;
  p.model_fits = fixed <= p.budget_bytes;
  if (!p.model_fits) {
    p.shortfall_bytes = fixed - p.budget_bytes;
    return;  // no KV at all: every capacity stays 0
  }
  p.kv_budget_bytes = p.budget_bytes - fixed;
  p.n_blocks = p.kv_budget_bytes / p.pool_block_bytes;
  p.token_capacity = p.n_blocks * o.block_size;
  p.max_concurrency = p.n_blocks / p.blocks_per_sequence;
  p.max_context = std::min(p.n_blocks / o.concurrency * o.block_size, m.context_length);
  if (m.kv_window > 0 && p.n_blocks / o.concurrency >= p.blocks_per_sequence) p.max_context = m.context_length;
  p.fits = p.kv_bytes_requested <= p.kv_budget_bytes;
  if (!p.fits) p.shortfall_bytes = p.kv_bytes_requested - p.kv_budget_bytes;
}

// The draft model (DraftPlan): whole on the one rank, sized for the target's step and pool.
Status add_draft(const PlanModel& d, Plan& p) {
  TALLY_RETURN_IF_ERROR(plan_model_validate(d));
  const PlanOptions& o = p.options;
  if (o.tp != 1)
    return make_error(ErrorCode::kInvalidArgument,
                      "a draft model is planned on one rank (tensor-parallel degree {})", o.tp);
  TALLY_RETURN_IF_ERROR(kv_types_check_shape(o.kv_type, d.n_kv_heads, d.head_dim));
  DraftPlan dp;
  dp.name = d.name;
  dp.n_params = d.n_params();
  const WeightFormat format = weight_format_native(d);
  for (const auto& t : d.tensors) dp.weight_bytes += weight_format_tensor_bytes(format, t, d);
  dp.kv_bytes_per_token = d.n_layers * kv_types_row_bytes(o.kv_type, d.n_kv_heads, d.head_dim);
  ActivationShape s;
  s.n_tokens = p.step_tokens;
  s.n_rows = std::min(p.step_tokens, o.concurrency);
  s.n_embd = d.n_embd;
  s.n_heads = d.n_heads;
  s.n_kv_heads = d.n_kv_heads;
  s.head_dim = d.head_dim;
  s.rope_dim = d.rope_dim > 0 ? d.rope_dim : d.head_dim;
  s.n_ff = d.n_expert > 0 ? d.ffn_hidden_width() : d.n_ff;
  s.n_vocab = d.n_vocab;
  s.n_expert = d.n_expert;
  s.n_expert_used = d.n_expert_used;
  dp.activation_terms = draft_activation_terms(s, o.draft_tokens);
  dp.activation_bytes = activation_bytes(dp.activation_terms);
  p.draft = std::move(dp);
  return Status::ok_status();
}

}  // namespace

Status check_draft_model(const PlanModel& target, const PlanModel& draft, int64_t context) {
  if (draft.n_vocab != target.n_vocab)
    return make_error(ErrorCode::kInvalidArgument,
                      "draft model {}: its vocabulary of {} tokens is not the target's {}",
                      draft.name, draft.n_vocab, target.n_vocab);
  const int64_t ctx = context > 0 ? context : target.context_length;
  if (draft.context_length < ctx)
    return make_error(ErrorCode::kInvalidArgument,
                      "draft model {}: it was trained for {} positions, the plan runs {}",
                      draft.name, draft.context_length, ctx);
  return Status::ok_status();
}

Result<Plan> compute_plan(const PlanModel& model, const PlanOptions& options,
                          const PlanModel* draft) {
  TALLY_RETURN_IF_ERROR(plan_model_validate(model));
  TALLY_RETURN_IF_ERROR(validate_options(model, options));
  Plan p;
  p.model = model;
  p.model.tensors.clear();
  p.options = options;
  if (p.options.context == 0) p.options.context = model.context_length;
  if (!p.options.weights) p.options.weights = weight_format_native(model);
  p.n_params = model.n_params();
  p.overhead_bytes = options.overhead_bytes;
  if (p.options.context > model.context_length)
    p.notes.push_back(fmt::format("context {} is longer than the model's trained {}",
                                  p.options.context, model.context_length));

  add_parallel_split(model, p);
  add_weights(model, *p.options.weights, p);
  p.step_tokens = std::min(p.options.batch_tokens, p.options.concurrency * p.options.context);
  if (draft) TALLY_RETURN_IF_ERROR(add_draft(*draft, p));
  TALLY_RETURN_IF_ERROR(add_kv(model, p));
  add_activations(model, p);
  add_capacity(model, p);
  return p;
}

}  // namespace tally::plan
