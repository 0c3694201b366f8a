#include "plan/plan_model.h"

#include <algorithm>
#include <tuple>

#include "io/gguf_tensor_names.h"

namespace tally::plan {

const char* tensor_role_name(TensorRole role) {
  switch (role) {
    case TensorRole::kTokenEmbd: return "token_embd";
    case TensorRole::kOutput: return "output";
    case TensorRole::kNorm: return "norm";
    case TensorRole::kAttnQ: return "attn_q";
    case TensorRole::kAttnK: return "attn_k";
    case TensorRole::kAttnV: return "attn_v";
    case TensorRole::kAttnOut: return "attn_output";
    case TensorRole::kBiasQ: return "attn_q.bias";
    case TensorRole::kBiasK: return "attn_k.bias";
    case TensorRole::kBiasV: return "attn_v.bias";
    case TensorRole::kFfnGate: return "ffn_gate";
    case TensorRole::kFfnUp: return "ffn_up";
    case TensorRole::kFfnDown: return "ffn_down";
    case TensorRole::kOther: return "other";
  }
  return "?";
}

int64_t PlanModel::n_params() const {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.n_elements();
  return n;
}

bool PlanModel::has_file_bytes() const {
  if (tensors.empty()) return false;
  for (const auto& t : tensors)
    if (!t.file_type) return false;
  return true;
}

int64_t PlanModel::file_weight_bytes() const {
  int64_t n = 0;
  for (const auto& t : tensors) n += t.file_bytes;
  return n;
}

bool plan_tensor_is_router(const PlanTensor& t) {
  const std::optional<io::GgufTensorId> id = io::gguf_tensor_parse(t.name);
  return id && id->tensor == io::GgufTensor::kFfnGateInp;
}

Status plan_model_validate(const PlanModel& m) {
  const std::pair<const char*, int64_t> fields[] = {
      {"n_layers", m.n_layers}, {"n_embd", m.n_embd},     {"n_heads", m.n_heads},
      {"n_kv_heads", m.n_kv_heads}, {"head_dim", m.head_dim}, {"n_ff", m.n_ff},
      {"n_vocab", m.n_vocab},   {"context_length", m.context_length},
  };
  for (const auto& [field, value] : fields) {
    if (value <= 0)
      return make_error(ErrorCode::kInvalidArgument, "model '{}': {} is {} (must be positive)",
                        m.name, field, value);
  }
  // Sanity limits far above any real model; they keep the ledger's products inside int64.
  const std::tuple<const char*, int64_t, int64_t> limits[] = {
      {"n_layers", m.n_layers, int64_t{1} << 12},
      {"n_embd", m.n_embd, int64_t{1} << 20},
      {"n_heads", m.n_heads, int64_t{1} << 16},
      {"head_dim", m.head_dim, int64_t{1} << 16},
      {"n_ff", m.n_ff, int64_t{1} << 22},
      {"n_vocab", m.n_vocab, int64_t{1} << 24},
      {"context_length", m.context_length, int64_t{1} << 30},
  };
  for (const auto& [field, value, limit] : limits) {
    if (value > limit)
      return make_error(ErrorCode::kOutOfRange, "model '{}': {} is {} (limit {})", m.name, field,
                        value, limit);
  }
  if (m.n_heads * m.head_dim > (int64_t{1} << 22))
    return make_error(ErrorCode::kOutOfRange, "model '{}': n_heads * head_dim is {} (limit {})",
                      m.name, m.n_heads * m.head_dim, int64_t{1} << 22);
  if (m.n_expert > 0 && (m.n_expert_used < 1 || m.n_expert_used > m.n_expert || m.n_ff_exp < 1 ||
                         m.n_ff_shexp < 0 || m.n_expert > (int64_t{1} << 12) || m.n_ff_exp > (int64_t{1} << 22) ||
                         m.n_ff_shexp > (int64_t{1} << 22)))
    return make_error(ErrorCode::kInvalidArgument,
                      "model '{}': {} experts, {} used, {} wide, shared {} (need 1 <= used <= experts)", m.name,
                      m.n_expert, m.n_expert_used, m.n_ff_exp, m.n_ff_shexp);
  if (m.rope_dim < 0 || m.rope_dim > m.head_dim)
    return make_error(ErrorCode::kInvalidArgument, "model '{}': rope_dim {} is not in [0, {}]",
                      m.name, m.rope_dim, m.head_dim);
  if (m.n_heads % m.n_kv_heads != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "model '{}': n_heads {} is not a multiple of n_kv_heads {}", m.name,
                      m.n_heads, m.n_kv_heads);
  return Status::ok_status();
}

namespace {

void add(std::vector<PlanTensor>& out, std::string name, TensorRole role, int layer,
         int64_t n_cols, int64_t n_rows, int64_t n_experts = 0) {
  PlanTensor t;
  t.name = std::move(name);
  t.role = role;
  t.layer = layer;
  t.n_cols = n_cols;
  t.n_rows = n_rows * std::max<int64_t>(n_experts, 1);
  t.n_experts = n_experts;
  out.push_back(std::move(t));
}

// Block i's ffn of a mixture of experts: router, experts, shared expert (llama.cpp's names).
void add_moe_ffn(std::vector<PlanTensor>& out, const PlanModel& m, int i) {
  using io::GgufTensor;
  auto blk = [i](io::GgufTensor t) { return io::gguf_tensor_name(t, i); };
  const int64_t e = m.n_expert;
  add(out, blk(GgufTensor::kFfnGateInp), TensorRole::kOther, i, m.n_embd, e);
  add(out, blk(GgufTensor::kFfnGateExps), TensorRole::kFfnGate, i, m.n_embd, m.n_ff_exp, e);
  add(out, blk(GgufTensor::kFfnUpExps), TensorRole::kFfnUp, i, m.n_embd, m.n_ff_exp, e);
  add(out, blk(GgufTensor::kFfnDownExps), TensorRole::kFfnDown, i, m.n_ff_exp, m.n_embd, e);
  if (m.n_ff_shexp == 0) return;
  add(out, blk(GgufTensor::kFfnGateInpShexp), TensorRole::kOther, i, m.n_embd, 1);
  add(out, blk(GgufTensor::kFfnGateShexp), TensorRole::kFfnGate, i, m.n_embd, m.n_ff_shexp);
  add(out, blk(GgufTensor::kFfnUpShexp), TensorRole::kFfnUp, i, m.n_embd, m.n_ff_shexp);
  add(out, blk(GgufTensor::kFfnDownShexp), TensorRole::kFfnDown, i, m.n_ff_shexp, m.n_embd);
}

}  // namespace

std::vector<PlanTensor> plan_model_shape_tensors(const PlanModel& m) {
  using io::GgufTensor;
  const int64_t q_dim = m.n_heads * m.head_dim;
  const int64_t kv_dim = m.n_kv_heads * m.head_dim;
  std::vector<PlanTensor> out;
  out.reserve(static_cast<size_t>(m.n_layers) * 16 + 3);
  add(out, io::gguf_tensor_name(GgufTensor::kTokenEmbd), TensorRole::kTokenEmbd, -1, m.n_embd, m.n_vocab);
  for (int i = 0; i < static_cast<int>(m.n_layers); ++i) {
    auto blk = [i](io::GgufTensor t) { return io::gguf_tensor_name(t, i); };
    add(out, blk(GgufTensor::kAttnNorm), TensorRole::kNorm, i, m.n_embd, 1);
    if (m.fused_projections) {  // kept whole, as gguf_source.cpp classifies it
      add(out, blk(GgufTensor::kAttnQkv), TensorRole::kOther, i, m.n_embd, q_dim + 2 * kv_dim);
    } else {
      add(out, blk(GgufTensor::kAttnQ), TensorRole::kAttnQ, i, m.n_embd, q_dim);
      add(out, blk(GgufTensor::kAttnK), TensorRole::kAttnK, i, m.n_embd, kv_dim);
      add(out, blk(GgufTensor::kAttnV), TensorRole::kAttnV, i, m.n_embd, kv_dim);
    }
    if (m.qkv_bias) {
      add(out, blk(GgufTensor::kAttnQBias), TensorRole::kBiasQ, i, q_dim, 1);
      add(out, blk(GgufTensor::kAttnKBias), TensorRole::kBiasK, i, kv_dim, 1);
      add(out, blk(GgufTensor::kAttnVBias), TensorRole::kBiasV, i, kv_dim, 1);
    }
    if (m.qk_norm) {
      add(out, blk(GgufTensor::kAttnQNorm), TensorRole::kNorm, i, m.head_dim, 1);
      add(out, blk(GgufTensor::kAttnKNorm), TensorRole::kNorm, i, m.head_dim, 1);
    }
    add(out, blk(GgufTensor::kAttnOut), TensorRole::kAttnOut, i, q_dim, m.n_embd);
    if (m.post_norms) add(out, blk(GgufTensor::kAttnPostNorm), TensorRole::kNorm, i, m.n_embd, 1);
    add(out, blk(GgufTensor::kFfnNorm), TensorRole::kNorm, i, m.n_embd, 1);
    if (m.n_expert > 0) {
      add_moe_ffn(out, m, i);
    } else if (m.fused_projections) {
      add(out, blk(GgufTensor::kFfnUp), TensorRole::kFfnUp, i, m.n_embd, 2 * m.n_ff);
      add(out, blk(GgufTensor::kFfnDown), TensorRole::kFfnDown, i, m.n_ff, m.n_embd);
    } else {
      add(out, blk(GgufTensor::kFfnGate), TensorRole::kFfnGate, i, m.n_embd, m.n_ff);
      add(out, blk(GgufTensor::kFfnUp), TensorRole::kFfnUp, i, m.n_embd, m.n_ff);
      add(out, blk(GgufTensor::kFfnDown), TensorRole::kFfnDown, i, m.n_ff, m.n_embd);
    }
    if (m.post_norms) add(out, blk(GgufTensor::kFfnPostNorm), TensorRole::kNorm, i, m.n_embd, 1);
  }
  add(out, io::gguf_tensor_name(GgufTensor::kOutputNorm), TensorRole::kNorm, -1, m.n_embd, 1);
  if (!m.tied_embeddings)
    add(out, io::gguf_tensor_name(GgufTensor::kOutput), TensorRole::kOutput, -1, m.n_embd, m.n_vocab);
  return out;
}

Result<PlanModel> plan_model_finish(PlanModel model) {
  TALLY_RETURN_IF_ERROR(plan_model_validate(model));
  model.tensors = plan_model_shape_tensors(model);
  return model;
}

}  // namespace tally::plan
