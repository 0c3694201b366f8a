#include "plan/gguf_source.h"

#include <charconv>
#include <string_view>

#include "io/gguf_hparams.h"

namespace tally::plan {

namespace {

// Role of a tensor from its GGUF name ("blk.<i>.<what>.weight", "token_embd.weight", ...).
struct NamedRole {
  std::string_view suffix;
  TensorRole role;
};
constexpr NamedRole kBlockRoles[] = {
    {"attn_norm.weight", TensorRole::kNorm},    {"ffn_norm.weight", TensorRole::kNorm},
    {"attn_q.weight", TensorRole::kAttnQ},      {"attn_k.weight", TensorRole::kAttnK},
    {"attn_v.weight", TensorRole::kAttnV},      {"attn_output.weight", TensorRole::kAttnOut},
    {"attn_q.bias", TensorRole::kBiasQ},        {"attn_k.bias", TensorRole::kBiasK},
    {"attn_v.bias", TensorRole::kBiasV},        {"ffn_gate.weight", TensorRole::kFfnGate},
    {"ffn_up.weight", TensorRole::kFfnUp},      {"ffn_down.weight", TensorRole::kFfnDown},
};

void classify(std::string_view name, PlanTensor& t) {
  if (name == "token_embd.weight") {
    t.role = TensorRole::kTokenEmbd;
    return;
  }
  if (name == "output.weight") {
    t.role = TensorRole::kOutput;
    return;
  }
  if (name == "output_norm.weight") {
    t.role = TensorRole::kNorm;
    return;
  }
  constexpr std::string_view kBlk = "blk.";
  if (!name.starts_with(kBlk)) return;
  std::string_view rest = name.substr(kBlk.size());
  int layer = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() + rest.size() || *end != '.') return;
  t.layer = layer;
  std::string_view what = rest.substr(static_cast<size_t>(end - rest.data()) + 1);
  for (const auto& r : kBlockRoles) {
    if (what == r.suffix) {
      t.role = r.role;
      return;
    }
  }
}

Status read_hparams(const io::GgufFile& f, PlanModel& m) {
  auto h = io::gguf_read_hparams(f);
  if (!h.ok()) return h.status().with_context(f.name());
  m.architecture = h->arch;
  m.n_layers = h->n_layers;
  m.n_embd = h->n_embd;
  m.n_heads = h->n_heads;
  m.n_ff = h->n_ff;
  m.context_length = h->context_length;
  m.n_kv_heads = h->n_kv_heads;
  m.head_dim = h->head_dim;
  // The vocabulary: the tokenizer's token list, else the embedding's rows.
  if (const io::GgufValue* tokens = f.find("tokenizer.ggml.tokens");
      tokens != nullptr && tokens->type == io::GgufType::kArray) {
    m.n_vocab = static_cast<int64_t>(tokens->items.size());
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
