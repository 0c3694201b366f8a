#include "plan/gguf_source.h"

#include <string_view>

#include "io/gguf_hparams.h"
#include "io/gguf_tensor_names.h"

namespace tally::plan {

namespace {

TensorRole role_of(io::GgufTensor tensor) {
  using io::GgufTensor;
  switch (tensor) {
    case GgufTensor::kTokenEmbd: return TensorRole::kTokenEmbd;
    case GgufTensor::kOutput: return TensorRole::kOutput;
    case GgufTensor::kOutputNorm:
    case GgufTensor::kAttnNorm:
    case GgufTensor::kFfnNorm:
    case GgufTensor::kAttnQNorm:
    case GgufTensor::kAttnKNorm:
    case GgufTensor::kAttnPostNorm:
    case GgufTensor::kFfnPostNorm: return TensorRole::kNorm;
    case GgufTensor::kAttnQ: return TensorRole::kAttnQ;
    case GgufTensor::kAttnK: return TensorRole::kAttnK;
    case GgufTensor::kAttnV: return TensorRole::kAttnV;
    case GgufTensor::kAttnOut: return TensorRole::kAttnOut;
    case GgufTensor::kAttnQBias: return TensorRole::kBiasQ;
    case GgufTensor::kAttnKBias: return TensorRole::kBiasK;
    case GgufTensor::kAttnVBias: return TensorRole::kBiasV;
    case GgufTensor::kFfnGate: return TensorRole::kFfnGate;
    case GgufTensor::kFfnUp: return TensorRole::kFfnUp;
    case GgufTensor::kFfnDown: return TensorRole::kFfnDown;
    case GgufTensor::kRopeFreqs:
    case GgufTensor::kRopeFactorsLong:
    case GgufTensor::kRopeFactorsShort:
    case GgufTensor::kAttnQkv: return TensorRole::kOther;  // phi3's fused q/k/v: not split yet
    // Experts split like a dense ffn (each expert's rows over the ranks); routers whole.
    case GgufTensor::kFfnGateExps:
    case GgufTensor::kFfnGateShexp: return TensorRole::kFfnGate;
    case GgufTensor::kFfnUpExps:
    case GgufTensor::kFfnUpShexp: return TensorRole::kFfnUp;
    case GgufTensor::kFfnDownExps:
    case GgufTensor::kFfnDownShexp: return TensorRole::kFfnDown;
    case GgufTensor::kFfnGateInp:
    case GgufTensor::kFfnGateInpShexp: return TensorRole::kOther;
  }
  return TensorRole::kOther;
}

bool gguf_name_is_tensor(std::string_view name, io::GgufTensor tensor) {
  const std::optional<io::GgufTensorId> id = io::gguf_tensor_parse(name);
  return id && id->tensor == tensor;
}

// Role (and block) of a tensor from its GGUF name; names outside llama.cpp's table stay kOther.
// An old Mixtral conversion's per-expert matrix (blk.N.ffn_gate.E.weight) is one expert of the
// merged tensor: an expert weight like it, not "other".
void classify(std::string_view name, PlanTensor& t) {
  if (const std::optional<io::GgufExpertTensorId> e = io::gguf_expert_tensor_parse(name)) {
    t.role = role_of(e->merged);
    t.layer = e->layer;
    t.n_experts = 1;
    return;
  }
  const std::optional<io::GgufTensorId> id = io::gguf_tensor_parse(name);
  if (!id) return;
  t.role = role_of(id->tensor);
  t.layer = id->layer;
}

Status read_hparams(const io::GgufFile& f, PlanModel& m) {
  auto h = io::gguf_read_hparams(f);
  if (!h.ok()) return h.status().with_context(f.name());
  m.architecture = h->arch;
  io::gguf_hparams_copy(*h, m);
  m.kv_window = h->full_window;
  auto moe = io::gguf_read_moe_hparams(f, h->arch, h->n_ff);
  if (!moe.ok()) return moe.status().with_context(f.name());
  m.n_expert = moe->n_expert;
  m.n_expert_used = moe->n_expert_used;
  m.n_ff_exp = moe->n_ff_exp;
  // The vocabulary: the tokenizer's token list, else the embedding's rows.
  if (const io::GgufValue* tokens = f.find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->type == io::GgufType::kArray) {
    m.n_vocab = static_cast<int64_t>(tokens->array_size());
  } else if (const io::GgufTensorInfo* embd = f.find_tensor("token_embd.weight");
             embd != nullptr && embd->dims.size() >= 2) {
    m.n_vocab = embd->dims[1];
  } else {
    return make_error(ErrorCode::kFormat,
                      "{}: no vocabulary size (neither tokenizer.ggml.tokens nor "
                      "token_embd.weight)",
                      f.name());
  }
  return Status::ok_status();
}

}  // namespace

Result<PlanModel> plan_model_from_gguf(const io::GgufFile& f) {
  PlanModel m;
  m.name = f.name();
  m.source = "gguf";
  TALLY_RETURN_IF_ERROR(read_hparams(f, m));
  TALLY_RETURN_IF_ERROR(plan_model_validate(m));

  m.tensors.reserve(f.tensors().size());
  for (const auto& info : f.tensors()) {
    PlanTensor t;
    t.name = std::string(info.name);
    classify(info.name, t);
    t.n_cols = info.dims.empty() ? 1 : info.dims[0];
    t.n_rows = 1;
    for (size_t d = 1; d < info.dims.size(); ++d) t.n_rows *= info.dims[d];
    t.file_type = info.type;
    t.file_bytes = static_cast<int64_t>(info.n_bytes);
    if (t.role == TensorRole::kBiasQ) m.qkv_bias = true;
    if (gguf_name_is_tensor(t.name, io::GgufTensor::kAttnQNorm)) m.qk_norm = true;
    if (gguf_name_is_tensor(t.name, io::GgufTensor::kAttnPostNorm)) m.post_norms = true;
    if (gguf_name_is_tensor(t.name, io::GgufTensor::kAttnQkv)) m.fused_projections = true;
    if (gguf_name_is_tensor(t.name, io::GgufTensor::kFfnGateShexp)) m.n_ff_shexp = t.n_rows;
    if (info.dims.size() == 3) t.n_experts = info.dims[2];
    m.tensors.push_back(std::move(t));
  }
  if (m.tensors.empty())
    return make_error(ErrorCode::kFormat, "{}: no tensors (a vocabulary-only file?)", f.name());
  m.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  return m;
}

Result<PlanModel> plan_model_from_gguf_path(const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(io::GgufFile file, io::GgufFile::open(path));
  return plan_model_from_gguf(file);
}

}  // namespace tally::plan
