#include "model/model_weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/gguf_tensor_names.h"
#include "tensor/quantize.h"

namespace tally {

namespace {

// Reads one byte of every page of a tensor used in place, so that its pages are resident from
// load on, as the ledger counts them ("mapped"), not faulted in by the first requests.
void fault_in(const uint8_t* data, size_t n_bytes) {
  constexpr size_t kPage = 4096;  // a smaller stride than the real page only costs reads
  uint8_t sink = 0;
  for (size_t i = 0; i < n_bytes; i += kPage) sink ^= static_cast<const volatile uint8_t*>(data)[i];
  if (n_bytes > 0) sink ^= static_cast<const volatile uint8_t*>(data)[n_bytes - 1];
  static_cast<void>(sink);
}

class Binder {
 public:
  Binder(const io::GgufFile& gguf, ModelWeights& w, const Backend& backend)
      : gguf_(gguf), w_(w), backend_(backend) {}

  // A tensor of exactly these dims (ggml order: dims[0] is the row length).
  Result<const io::GgufTensorInfo*> find(const std::string& name, std::initializer_list<int64_t> dims) {
    const io::GgufTensorInfo* t = gguf_.find_tensor(name);
    if (!t) return make_error(ErrorCode::kNotFound, "model: tensor '{}' not found", name);
    if (!std::equal(t->dims.begin(), t->dims.end(), dims.begin(), dims.end()))
      return make_error(ErrorCode::kFormat, "model: tensor '{}' has shape [{}], expected [{}]", name,
                        fmt::join(t->dims, ", "), fmt::join(dims, ", "));
    if (!dtype_traits(t->raw_type))
      return make_error(ErrorCode::kUnsupported, "model: tensor '{}' has unknown type {}", name, t->raw_type);
    return t;
  }

  bool has(const std::string& name) const { return gguf_.find_tensor(name) != nullptr; }

  // repack: types the backend prepares go to its layout (matrices only matmul reads).
  Result<WeightMatrix> matrix(const std::string& name, int64_t n_in, int64_t n_out, bool repack = true) {
    TALLY_ASSIGN_OR_RETURN(std::vector<WeightMatrix> parts, matrix_parts(name, n_in, {n_out}, repack));
    return parts[0];
  }

  // Consecutive row blocks of one tensor ([n_in, sum of rows]) as matrices of their own (phi3's
  // fused q/k/v and gate/up), each prepared on its own when the backend repacks the type.
  Result<std::vector<WeightMatrix>> matrix_parts(const std::string& name, int64_t n_in,
                                                 std::initializer_list<int64_t> rows, bool repack = true) {
    int64_t n_out = 0;
    for (int64_t r : rows) n_out += r;
    TALLY_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, find(name, {n_in, n_out}));
    return row_blocks(*t, n_in, std::vector<int64_t>(rows), repack);
  }

  // The n_expert matrices of a 3-D expert tensor ([n_in, n_out, n_expert]: expert e's rows
  // follow expert e - 1's), one view (or repacked copy) each.
  Result<std::vector<WeightMatrix>> expert_matrices(const std::string& name, int64_t n_in, int64_t n_out,
                                                    int64_t n_expert) {
    TALLY_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, find(name, {n_in, n_out, n_expert}));
    return row_blocks(*t, n_in, std::vector<int64_t>(static_cast<size_t>(n_expert), n_out), true);
  }

  // A 1-D tensor [n_in] as a matrix of one row (qwen2moe's shared-expert gate).
  Result<WeightMatrix> row_matrix(const std::string& name, int64_t n_in) {
    TALLY_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, find(name, {n_in}));
    TALLY_ASSIGN_OR_RETURN(std::vector<WeightMatrix> parts, row_blocks(*t, n_in, {1}, /*repack=*/false));
    return parts[0];
  }

  // An f32 vector of n values: a view when stored as aligned f32, else converted.
  Result<std::span<const float>> vector(const std::string& name, int64_t n) {
    TALLY_ASSIGN_OR_RETURN(const io::GgufTensorInfo* t, find(name, {n}));
    if (t->type != DType::kF32 && t->type != DType::kF16 && t->type != DType::kBF16)
      return make_error(ErrorCode::kUnsupported, "model: tensor '{}' has type {}, expected f32, f16 or bf16", name,
                        dtype_name(t->type));
    if (t->n_bytes < static_cast<uint64_t>(dtype_row_bytes(t->type, n)))
      return make_error(ErrorCode::kFormat, "model: tensor '{}' does not fit its {} bytes", name, t->n_bytes);
    if (t->type == DType::kF32 && reinterpret_cast<uintptr_t>(t->data) % alignof(float) == 0) {
      count_view(*t, n * 4);
      fault_in(t->data, static_cast<size_t>(n * 4));
      return std::span<const float>(reinterpret_cast<const float*>(t->data), n);
    }
    std::vector<float>& out = w_.owned.emplace_back(n);
    if (t->type == DType::kF32)
      std::memcpy(out.data(), t->data, n * sizeof(float));
    else
      dequantize_row(t->type, t->data, out.data(), n);
    w_.owned_bytes += n * 4;
    return std::span<const float>(out);
  }

 private:
  // Consecutive blocks of `rows` rows of t (n_in values each), as views into the mapping or,
  // when the backend prepares the type, as repacked copies.
  Result<std::vector<WeightMatrix>> row_blocks(const io::GgufTensorInfo& tensor, int64_t n_in,
                                               const std::vector<int64_t>& rows, bool repack) {
    const io::GgufTensorInfo* t = &tensor;
    const std::string_view name = t->name;
    int64_t n_out = 0;
    for (int64_t r : rows) n_out += r;
    if (!dtype_info(t->type).computable || !dtype_has_row_conversion(t->type))
      return make_error(ErrorCode::kUnsupported, "model: tensor '{}' has type {}, which tally cannot compute with",
                        name, dtype_name(t->type));
    const auto row_bytes = dtype_row_bytes_checked(t->raw_type, n_in);
    if (!row_bytes || static_cast<uint64_t>(*row_bytes) * n_out > t->n_bytes)
      return make_error(ErrorCode::kFormat, "model: tensor '{}' ({}, [{}, {}]) does not fit its {} bytes", name,
                        dtype_name(t->type), n_in, n_out, t->n_bytes);
    std::vector<WeightMatrix> views;
    int64_t first_row = 0;
    for (int64_t r : rows) {
      views.push_back(WeightMatrix{t->type, n_in, r, t->data + first_row * *row_bytes, *row_bytes});
      first_row += r;
    }
    if (!repack || !backend_.can_prepare(t->type)) {
      count_view(*t, *row_bytes * n_out);
      fault_in(t->data, static_cast<size_t>(*row_bytes * n_out));
      return views;
    }
    for (WeightMatrix& v : views) {
      const PreparedWeights& r = *w_.repacked.emplace_back(backend_.prepare_weights(v));
      w_.owned_bytes += r.bytes();
      w_.repacked_bytes += r.bytes();
      v = r.view();
    }
    // The copies hold every byte of the source: its mapped pages would be resident twice.
    w_.released_bytes += static_cast<int64_t>(gguf_.release_tensor_pages(*t));
    return views;
  }

  // A view used in place: of a mapped file (shared page cache), or of bytes the model file
  // itself copied into memory (a Hugging Face tensor that had to be transformed).
  void count_view(const io::GgufTensorInfo& t, int64_t bytes) {
    (gguf_.owns_bytes_of(t) ? w_.owned_bytes : w_.mapped_bytes) += bytes;
  }

  const io::GgufFile& gguf_;
  ModelWeights& w_;
  const Backend& backend_;
};

// The router and the experts of layer i (3-D tensors, one matrix per expert), and the shared
// expert where the arch has one (bound as the layer's dense gate/up/down).
Status bind_experts(Binder& b, const ModelConfig& c, int64_t i, LayerWeights& l) {
  using io::GgufTensor;
  const auto name = [i](GgufTensor t) { return io::gguf_tensor_name(t, i); };
  TALLY_ASSIGN_OR_RETURN(l.router, b.matrix(name(GgufTensor::kFfnGateInp), c.n_embd, c.n_expert, /*repack=*/false));
  // Older Mixtral conversions store one 2-D tensor per expert (blk.N.ffn_gate.E.weight): the
  // same matrices, bound one by one.
  const bool per_expert = !b.has(name(GgufTensor::kFfnGateExps)) &&
                          b.has(io::gguf_expert_tensor_name(GgufTensor::kFfnGateExps, i, 0));
  const auto experts = [&](GgufTensor t, int64_t n_in, int64_t n_out) -> Result<std::vector<WeightMatrix>> {
    if (!per_expert) return b.expert_matrices(name(t), n_in, n_out, c.n_expert);
    std::vector<WeightMatrix> out;
    for (int64_t e = 0; e < c.n_expert; ++e) {
      TALLY_ASSIGN_OR_RETURN(WeightMatrix m, b.matrix(io::gguf_expert_tensor_name(t, i, e), n_in, n_out));
      out.push_back(m);
    }
    return out;
  };
  TALLY_ASSIGN_OR_RETURN(l.exp_gate, experts(GgufTensor::kFfnGateExps, c.n_embd, c.n_ff_exp));
  TALLY_ASSIGN_OR_RETURN(l.exp_up, experts(GgufTensor::kFfnUpExps, c.n_embd, c.n_ff_exp));
  TALLY_ASSIGN_OR_RETURN(l.exp_down, experts(GgufTensor::kFfnDownExps, c.n_ff_exp, c.n_embd));
  if (c.n_ff_shexp > 0) {
    TALLY_ASSIGN_OR_RETURN(l.shexp_gate_inp, b.row_matrix(name(GgufTensor::kFfnGateInpShexp), c.n_embd));
    TALLY_ASSIGN_OR_RETURN(l.w_gate, b.matrix(name(GgufTensor::kFfnGateShexp), c.n_embd, c.n_ff_shexp));
    TALLY_ASSIGN_OR_RETURN(l.w_up, b.matrix(name(GgufTensor::kFfnUpShexp), c.n_embd, c.n_ff_shexp));
    TALLY_ASSIGN_OR_RETURN(l.w_down, b.matrix(name(GgufTensor::kFfnDownShexp), c.n_ff_shexp, c.n_embd));
  }
  return Status::ok_status();
}

Result<LayerWeights> bind_layer(Binder& b, const ModelConfig& c, int64_t i) {
  using io::GgufTensor;
  const auto name = [i](GgufTensor t) { return io::gguf_tensor_name(t, i); };
  LayerWeights l;
  TALLY_ASSIGN_OR_RETURN(l.attn_norm, b.vector(name(GgufTensor::kAttnNorm), c.n_embd));
  if (c.arch->fused_projections && b.has(name(GgufTensor::kAttnQkv))) {
    TALLY_ASSIGN_OR_RETURN(auto qkv, b.matrix_parts(name(GgufTensor::kAttnQkv), c.n_embd,
                                                    {c.q_dim(), c.kv_dim(), c.kv_dim()}));
    l.wq = qkv[0];
    l.wk = qkv[1];
    l.wv = qkv[2];
  } else {
    TALLY_ASSIGN_OR_RETURN(l.wq, b.matrix(name(GgufTensor::kAttnQ), c.n_embd, c.q_dim()));
    TALLY_ASSIGN_OR_RETURN(l.wk, b.matrix(name(GgufTensor::kAttnK), c.n_embd, c.kv_dim()));
    TALLY_ASSIGN_OR_RETURN(l.wv, b.matrix(name(GgufTensor::kAttnV), c.n_embd, c.kv_dim()));
  }
  if (c.arch->qkv_bias) {
    TALLY_ASSIGN_OR_RETURN(l.bq, b.vector(name(GgufTensor::kAttnQBias), c.q_dim()));
    TALLY_ASSIGN_OR_RETURN(l.bk, b.vector(name(GgufTensor::kAttnKBias), c.kv_dim()));
    TALLY_ASSIGN_OR_RETURN(l.bv, b.vector(name(GgufTensor::kAttnVBias), c.kv_dim()));
  }
  if (c.arch->qk_norm) {
    TALLY_ASSIGN_OR_RETURN(l.q_norm, b.vector(name(GgufTensor::kAttnQNorm), c.head_dim));
    TALLY_ASSIGN_OR_RETURN(l.k_norm, b.vector(name(GgufTensor::kAttnKNorm), c.head_dim));
  }
  TALLY_ASSIGN_OR_RETURN(l.wo, b.matrix(name(GgufTensor::kAttnOut), c.q_dim(), c.n_embd));
  TALLY_ASSIGN_OR_RETURN(l.ffn_norm, b.vector(name(GgufTensor::kFfnNorm), c.n_embd));
  if (c.is_moe()) {
    TALLY_RETURN_IF_ERROR(bind_experts(b, c, i, l));
  } else if (c.arch->fused_projections) {
    TALLY_ASSIGN_OR_RETURN(auto gate_up, b.matrix_parts(name(GgufTensor::kFfnUp), c.n_embd, {c.n_ff, c.n_ff}));
    l.w_gate = gate_up[0];
    l.w_up = gate_up[1];
  } else {
    TALLY_ASSIGN_OR_RETURN(l.w_gate, b.matrix(name(GgufTensor::kFfnGate), c.n_embd, c.n_ff));
    TALLY_ASSIGN_OR_RETURN(l.w_up, b.matrix(name(GgufTensor::kFfnUp), c.n_embd, c.n_ff));
  }
  if (!c.is_moe()) {
    TALLY_ASSIGN_OR_RETURN(l.w_down, b.matrix(name(GgufTensor::kFfnDown), c.n_ff, c.n_embd));
  }
  if (c.arch->post_norms) {
    TALLY_ASSIGN_OR_RETURN(l.attn_post_norm, b.vector(name(GgufTensor::kAttnPostNorm), c.n_embd));
    TALLY_ASSIGN_OR_RETURN(l.ffn_post_norm, b.vector(name(GgufTensor::kFfnPostNorm), c.n_embd));
  }
  return l;
}

}  // namespace

Result<ModelWeights> bind_weights(const io::GgufFile& gguf, const ModelConfig& c,
                                  const Backend& backend, const LoadProgress& progress) {
  using io::GgufTensor;
  const auto name = [](GgufTensor t) { return io::gguf_tensor_name(t); };
  ModelWeights w;
  Binder b(gguf, w, backend);
  // Embedding rows are read one at a time (and may double as the output): GGUF's layout.
  TALLY_ASSIGN_OR_RETURN(w.token_embd, b.matrix(name(GgufTensor::kTokenEmbd), c.n_embd, c.n_vocab, /*repack=*/false));
  TALLY_ASSIGN_OR_RETURN(w.output_norm, b.vector(name(GgufTensor::kOutputNorm), c.n_embd));
  if (c.tied_output) {
    w.output = w.token_embd;
  } else {
    TALLY_ASSIGN_OR_RETURN(w.output, b.matrix(name(GgufTensor::kOutput), c.n_embd, c.n_vocab));
  }
  // Per-pair frequency divisors: positive and finite, or a clear error.
  const auto bind_factors = [&](GgufTensor t, std::span<const float>& out) -> Status {
    TALLY_ASSIGN_OR_RETURN(out, b.vector(name(t), c.rope_dim / 2));
    for (float f : out)
      if (!(f > 0.0f) || !std::isfinite(f))
        return make_error(ErrorCode::kFormat, "model: tensor '{}' holds {}, expected positive factors", name(t), f);
    return Status::ok_status();
  };
  if (c.has_rope_freqs) TALLY_RETURN_IF_ERROR(bind_factors(GgufTensor::kRopeFreqs, w.rope_freqs));
  if (c.has_longrope) {
    TALLY_RETURN_IF_ERROR(bind_factors(GgufTensor::kRopeFactorsLong, w.rope_factors_long));
    TALLY_RETURN_IF_ERROR(bind_factors(GgufTensor::kRopeFactorsShort, w.rope_factors_short));
  }
  w.layers.reserve(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    TALLY_ASSIGN_OR_RETURN(LayerWeights l, bind_layer(b, c, i));
    w.layers.push_back(l);
    if (progress) progress(i + 1, c.n_layers);
  }
  return w;
}

}  // namespace tally
