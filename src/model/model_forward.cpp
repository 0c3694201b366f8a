// Model::forward: the per-layer op sequence of model.h over the ragged batch, one backend call
// per op.
#include <algorithm>
#include <cmath>
#include <span>

#include "backend/backend.h"
#include "model/model.h"
#include "model/moe_routing.h"

namespace tally {

namespace {

// One call of forward(): the batch, its buffers and the per-step tables.
class ForwardStep {
 public:
  ForwardStep(const Model& m, const Batch& b, KvStorage& kv, ForwardScratch& s, ThreadPool& pool,
              MatmulObserver* observer)
      : be_(m.backend()), c_(m.config()), w_(m.weights()), freqs_(m.rope_freqs()),
        local_freqs_(m.local_rope_freqs()), b_(b), kv_(kv), s_(s), pool_(pool), observer_(observer),
        n_(b.n_tokens()) {}

  void run(float* logits) {
    prepare();
    embed();
    for (int64_t l = 0; l < c_.n_layers; ++l) {
      attention_block(l);
      if (c_.is_moe())
        moe_block(l);
      else
        ffn_block(l);
    }
    output(logits);
  }

 private:
  // The one place the forward pass reports a product's input (imatrix collection).
  void observe(io::GgufTensor t, int64_t layer, const float* x, int64_t n_rows, int64_t n_cols,
               int64_t expert = -1) {
    if (observer_)
      observer_->observe({t, static_cast<int32_t>(layer), static_cast<int32_t>(expert)}, x, n_rows, n_cols);
  }

  // KV slots of the tokens, block tables of the sequences, rope angles of the positions.
  void prepare() {
    table_is_local_ = false;
    const int64_t bs = kv_.shape().block_size;
    for (size_t i = 0; i < b_.seqs.size(); ++i)
      s_.tables[i] = {b_.seqs[i].block_table.data(), static_cast<int64_t>(b_.seqs[i].block_table.size())};
    for (int64_t t = 0; t < n_; ++t) {
      const int64_t pos = b_.positions[t];
      s_.slots[t] = static_cast<int64_t>(s_.tables[b_.seq_index[t]].ids[pos / bs]) * bs + pos % bs;
    }
    be_.rope_table(b_.positions.data(), n_, freqs_.data(), c_.rope_dim, c_.arch->rope_layout, s_.rope_cos,
                   s_.rope_sin);
  }

  void embed() {
    be_.get_rows(w_.token_embd, b_.tokens.data(), n_, s_.x, pool_);
    if (c_.arch->embd_scale) be_.scale(s_.x, std::sqrt(static_cast<float>(c_.n_embd)), n_ * c_.n_embd, pool_);
  }

  // The rope tables of layer l's kind. With a local base of its own (gemma3) the one pair of
  // tables is rebuilt when the kind changes (twice per six layers), which costs less than a
  // second pair of per-token buffers in every step's scratch.
  void select_rope_table(bool local) {
    if (local_freqs_.empty() || local == table_is_local_) return;
    const std::vector<float>& f = local ? local_freqs_ : freqs_;
    be_.rope_table(b_.positions.data(), n_, f.data(), c_.rope_dim, c_.arch->rope_layout, s_.rope_cos, s_.rope_sin);
    table_is_local_ = local;
  }

  // The residual add of a block's output in xn, through its post norm where the arch has one.
  void add_block_output(std::span<const float> post_norm) {
    if (!post_norm.empty()) be_.rmsnorm(s_.xn, post_norm.data(), s_.xn, n_, c_.n_embd, c_.norm_eps, pool_);
    be_.add(s_.x, s_.xn, n_ * c_.n_embd, pool_);
  }

  void attention_block(int64_t l) {
    const LayerWeights& lw = w_.layers[l];
    be_.rmsnorm(s_.x, lw.attn_norm.data(), s_.xn, n_, c_.n_embd, c_.norm_eps, pool_);
    const MatmulOutput qkv[] = {{&lw.wq, s_.q}, {&lw.wk, s_.k}, {&lw.wv, s_.v}};
    for (io::GgufTensor t : {io::GgufTensor::kAttnQ, io::GgufTensor::kAttnK, io::GgufTensor::kAttnV})
      observe(t, l, s_.xn, n_, c_.n_embd);
    be_.matmul_shared_input(qkv, s_.xn, n_, pool_);
    if (c_.arch->qkv_bias) {
      be_.add_bias(s_.q, lw.bq.data(), n_, c_.q_dim(), pool_);
      be_.add_bias(s_.k, lw.bk.data(), n_, c_.kv_dim(), pool_);
      be_.add_bias(s_.v, lw.bv.data(), n_, c_.kv_dim(), pool_);
    }
    if (c_.arch->qk_norm) {  // every head is a row of head_dim values
      be_.rmsnorm(s_.q, lw.q_norm.data(), s_.q, n_ * c_.n_heads, c_.head_dim, c_.norm_eps, pool_);
      be_.rmsnorm(s_.k, lw.k_norm.data(), s_.k, n_ * c_.n_kv_heads, c_.head_dim, c_.norm_eps, pool_);
    }
    const bool local = c_.is_local_layer(l);
    select_rope_table(local);
    const RopeLayout layout = c_.arch->rope_layout;
    be_.rope({c_.n_heads, c_.head_dim, c_.rope_dim, layout}, s_.rope_cos, s_.rope_sin, n_, s_.q, pool_);
    be_.rope({c_.n_kv_heads, c_.head_dim, c_.rope_dim, layout}, s_.rope_cos, s_.rope_sin, n_, s_.k, pool_);
    write_kv(l);

    AttentionArgs a;
    a.n_tokens = n_;
    a.n_heads = c_.n_heads;
    a.n_kv_heads = c_.n_kv_heads;
    a.head_dim = c_.head_dim;
    a.q = s_.q;
    a.out = s_.att;
    a.positions = b_.positions.data();
    a.seq_index = b_.seq_index.data();
    a.block_tables = s_.tables;
    a.kv = kv_.layer_view(l);
    a.window = local ? c_.sliding_window : 0;
    a.score_divisor = c_.attention_divisor(local);
    a.softcap = c_.attn_softcap;
    be_.attention(a, pool_);

    observe(io::GgufTensor::kAttnOut, l, s_.att, n_, lw.wo.n_in);
    be_.matmul(lw.wo, s_.att, n_, s_.xn, pool_);
    add_block_output(lw.attn_post_norm);
  }

  // Rows are converted to the cache's type as they are stored.
  void write_kv(int64_t l) {
    KvWriteArgs w;
    w.k = kv_.k_bytes(l);
    w.v = kv_.v_bytes(l);
    w.k_dtype = kv_.types().k;
    w.v_dtype = kv_.types().v;
    w.n_kv_heads = c_.n_kv_heads;
    w.head_dim = c_.head_dim;
    w.n_tokens = n_;
    w.slots = s_.slots;
    w.k_rows = s_.k;
    w.v_rows = s_.v;
    be_.kv_write(w);
  }

  void ffn_block(int64_t l) {
    const LayerWeights& lw = w_.layers[l];
    be_.rmsnorm(s_.x, lw.ffn_norm.data(), s_.xn, n_, c_.n_embd, c_.norm_eps, pool_);
    const MatmulOutput gate_up[] = {{&lw.w_gate, s_.gate}, {&lw.w_up, s_.up}};
    observe(io::GgufTensor::kFfnGate, l, s_.xn, n_, c_.n_embd);
    observe(io::GgufTensor::kFfnUp, l, s_.xn, n_, c_.n_embd);
    be_.matmul_shared_input(gate_up, s_.xn, n_, pool_);
    if (c_.arch->ffn_act == FfnActivation::kGeluTanh)
      be_.gelu_mul(s_.gate, s_.up, n_, c_.n_ff, pool_);
    else
      be_.silu_mul(s_.gate, s_.up, n_, c_.n_ff, pool_);
    observe(io::GgufTensor::kFfnDown, l, s_.gate, n_, lw.w_down.n_in);
    be_.matmul(lw.w_down, s_.gate, n_, s_.xn, pool_);
    add_block_output(lw.ffn_post_norm);
  }

  // The mixture-of-experts FFN: route every token, then run each chosen expert once over all
  // of its tokens (gathered rows), adding its outputs, times the tokens' weights, to their
  // sums. Experts go in index order, so each token's sum is added up in its experts' order
  // whatever else shares the step. A shared expert (qwen2moe) comes last, scaled by
  // sigmoid(xn · gate_inp_shexp).
  void moe_block(int64_t l) {
    const LayerWeights& lw = w_.layers[l];
    be_.rmsnorm(s_.x, lw.ffn_norm.data(), s_.xn, n_, c_.n_embd, c_.norm_eps, pool_);
    observe(io::GgufTensor::kFfnGateInp, l, s_.xn, n_, c_.n_embd);
    be_.matmul(lw.router, s_.xn, n_, s_.moe_logits, pool_);
    const MoeRoutingShape shape{n_, c_.n_expert, c_.n_expert_used, c_.arch->moe_norm_topk};
    moe_route(s_.moe_logits, shape, s_.routing);
    std::fill(s_.moe_acc, s_.moe_acc + n_ * c_.n_embd, 0.0f);
    const int64_t row_bytes = c_.n_embd * static_cast<int64_t>(sizeof(float));
    const WeightMatrix xn_rows{DType::kF32, c_.n_embd, n_, reinterpret_cast<const uint8_t*>(s_.xn), row_bytes};
    for (int64_t e = 0; e < c_.n_expert; ++e) {
      const int32_t begin = s_.routing.expert_begin[e];
      const int64_t count = s_.routing.expert_begin[e + 1] - begin;
      if (count == 0) continue;
      const int32_t* tokens = s_.routing.tokens + begin;
      be_.get_rows(xn_rows, tokens, count, s_.moe_in, pool_);
      run_swiglu(lw.exp_gate[e], lw.exp_up[e], lw.exp_down[e], s_.moe_in, count, nullptr, nullptr,
                 {l, e, io::GgufTensor::kFfnGateExps, io::GgufTensor::kFfnUpExps, io::GgufTensor::kFfnDownExps});
      be_.add_rows_scaled(s_.moe_acc, s_.moe_out, tokens, s_.routing.weights + begin, count, c_.n_embd, pool_);
    }
    if (c_.n_ff_shexp > 0) {
      float* gate_logit = s_.moe_logits;  // [n_tokens][1]: the router logits are spent
      run_swiglu(lw.w_gate, lw.w_up, lw.w_down, s_.xn, n_, &lw.shexp_gate_inp, gate_logit,
                 {l, -1, io::GgufTensor::kFfnGateShexp, io::GgufTensor::kFfnUpShexp, io::GgufTensor::kFfnDownShexp});
      float* gate_weight = s_.routing.weights;  // [n_tokens]: the dispatch weights are spent
      for (int64_t t = 0; t < n_; ++t) gate_weight[t] = 1.0f / (1.0f + std::exp(-gate_logit[t]));
      be_.add_rows_scaled(s_.moe_acc, s_.moe_out, nullptr, gate_weight, n_, c_.n_embd, pool_);
    }
    be_.add(s_.x, s_.moe_acc, n_ * c_.n_embd, pool_);
  }

  // moe_out = down(silu(in · gate) * (in · up)) for n rows; with `extra`, extra_out = in · extra
  // in the same pass over the input (the shared expert's gate).
  // `site` names the three matrices for the observer.
  struct SwigluSite {
    int64_t layer, expert;
    io::GgufTensor gate, up, down;
  };
  void run_swiglu(const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, const float* in,
                  int64_t n, const WeightMatrix* extra, float* extra_out, const SwigluSite& site) {
    const MatmulOutput outs[] = {{&gate, s_.gate}, {&up, s_.up}, {extra, extra_out}};
    observe(site.gate, site.layer, in, n, gate.n_in, site.expert);
    observe(site.up, site.layer, in, n, up.n_in, site.expert);
    if (extra) observe(io::GgufTensor::kFfnGateInpShexp, site.layer, in, n, extra->n_in);
    be_.matmul_shared_input(std::span(outs, extra ? 3 : 2), in, n, pool_);
    be_.silu_mul(s_.gate, s_.up, n, gate.n_out, pool_);
    observe(site.down, site.layer, s_.gate, n, down.n_in, site.expert);
    be_.matmul(down, s_.gate, n, s_.moe_out, pool_);
  }

  // Final norm and output matrix for the requested rows only, gathered into xn.
  void output(float* logits) {
    const int64_t n_rows = static_cast<int64_t>(b_.logit_rows.size());
    if (n_rows == 0) return;
    const int64_t row_bytes = c_.n_embd * static_cast<int64_t>(sizeof(float));
    const WeightMatrix x_rows{DType::kF32, c_.n_embd, n_, reinterpret_cast<const uint8_t*>(s_.x), row_bytes};
    be_.get_rows(x_rows, b_.logit_rows.data(), n_rows, s_.xn, pool_);
    be_.rmsnorm(s_.xn, w_.output_norm.data(), s_.xn, n_rows, c_.n_embd, c_.norm_eps, pool_);
    observe(io::GgufTensor::kOutput, -1, s_.xn, n_rows, c_.n_embd);
    be_.matmul(w_.output, s_.xn, n_rows, logits, pool_);
    if (c_.final_softcap > 0.0f) be_.softcap(logits, c_.final_softcap, n_rows * c_.n_vocab, pool_);
  }

  const Backend& be_;
  const ModelConfig& c_;
  const ModelWeights& w_;
  const std::vector<float>& freqs_;
  const std::vector<float>& local_freqs_;
  const Batch& b_;
  KvStorage& kv_;
  ForwardScratch& s_;
  ThreadPool& pool_;
  MatmulObserver* observer_;  // null unless the caller collects (imatrix)
  const int64_t n_;
  bool table_is_local_ = false;  // whose frequencies the rope tables hold
};

}  // namespace

Status Model::forward(const Batch& batch, KvStorage& kv, ForwardScratch& scratch, ThreadPool& pool,
                      float* logits, MatmulObserver* observer) const {
  if (!scratch.fits(config_))
    return make_error(ErrorCode::kInvalidArgument, "forward: the scratch buffers were sized for another model");
  const KvStorageShape& ks = kv.shape();
  if (ks.n_layers != config_.n_layers || ks.n_kv_heads != config_.n_kv_heads || ks.head_dim != config_.head_dim)
    return make_error(ErrorCode::kInvalidArgument,
                      "forward: the KV cache holds {} layers x {} heads x {} dims, the model needs {} x {} x {}",
                      ks.n_layers, ks.n_kv_heads, ks.head_dim, config_.n_layers, config_.n_kv_heads,
                      config_.head_dim);
  const BatchLimits limits{config_.n_vocab, config_.context_length, ks.n_blocks, ks.block_size,
                           scratch.max_tokens(), config_.full_window()};
  TALLY_RETURN_IF_ERROR(validate_batch(batch, limits));
  if (!batch.logit_rows.empty() && logits == nullptr)
    return make_error(ErrorCode::kInvalidArgument, "forward: {} logit rows requested but no logits buffer",
                      batch.logit_rows.size());
  if (batch.n_tokens() == 0) return Status::ok_status();
  ForwardStep(*this, batch, kv, scratch, pool, observer).run(logits);
  return Status::ok_status();
}

}  // namespace tally
