// Model::forward: the per-layer op sequence of model.h over the ragged batch.
#include <cstring>

#include "backend/cpu/attention.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/rmsnorm.h"
#include "backend/cpu/rope.h"
#include "model/model.h"
#include "tensor/quantize.h"

namespace tally {

namespace {

// One call of forward(): the batch, its buffers and the per-step tables.
class ForwardStep {
 public:
  ForwardStep(const Model& m, const Batch& b, KvStorage& kv, ForwardScratch& s, ThreadPool& pool)
      : c_(m.config()), w_(m.weights()), freqs_(m.rope_freqs()), b_(b), kv_(kv), s_(s), pool_(pool),
        n_(b.n_tokens()) {}

  void run(float* logits) {
    prepare();
    embed();
    for (int64_t l = 0; l < c_.n_layers; ++l) {
      attention_block(l);
      ffn_block(l);
    }
    output(logits);
  }

 private:
  // KV slots of the tokens, block tables of the sequences, rope angles of the positions.
  void prepare() {
    const int64_t bs = kv_.shape().block_size;
    for (size_t i = 0; i < b_.seqs.size(); ++i)
      s_.tables[i] = {b_.seqs[i].block_table.data(), static_cast<int64_t>(b_.seqs[i].block_table.size())};
    for (int64_t t = 0; t < n_; ++t) {
      const int64_t pos = b_.positions[t];
      s_.slots[t] = static_cast<int64_t>(s_.tables[b_.seq_index[t]].ids[pos / bs]) * bs + pos % bs;
    }
    cpu::rope_table(b_.positions.data(), n_, freqs_.data(), c_.rope_dim, c_.arch->rope_layout, s_.rope_cos,
                    s_.rope_sin);
  }

  void embed() {
    const cpu::WeightMatrix& e = w_.token_embd;
    pool_.parallel_for(n_, 16, [&](int64_t begin, int64_t end, int) {
      for (int64_t t = begin; t < end; ++t)
        dequantize_row(e.type, e.data + b_.tokens[t] * e.row_bytes, s_.x + t * c_.n_embd, c_.n_embd);
    });
  }

  void attention_block(int64_t l) {
    const LayerWeights& lw = w_.layers[l];
    cpu::rmsnorm(s_.x, lw.attn_norm.data(), s_.xn, n_, c_.n_embd, c_.norm_eps, pool_);
    const cpu::MatmulOutput qkv[] = {{&lw.wq, s_.q}, {&lw.wk, s_.k}, {&lw.wv, s_.v}};
    cpu::matmul_shared_input(qkv, s_.xn, n_, pool_);
    if (c_.arch->qkv_bias) {
      cpu::add_bias(s_.q, lw.bq.data(), n_, c_.q_dim(), pool_);
      cpu::add_bias(s_.k, lw.bk.data(), n_, c_.kv_dim(), pool_);
      cpu::add_bias(s_.v, lw.bv.data(), n_, c_.kv_dim(), pool_);
    }
    const cpu::RopeLayout layout = c_.arch->rope_layout;
    cpu::rope({c_.n_heads, c_.head_dim, c_.rope_dim, layout}, s_.rope_cos, s_.rope_sin, n_, s_.q, pool_);
    cpu::rope({c_.n_kv_heads, c_.head_dim, c_.rope_dim, layout}, s_.rope_cos, s_.rope_sin, n_, s_.k, pool_);
    write_kv(l);

    cpu::AttentionArgs a;
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
    cpu::attention(a, pool_);

    cpu::matmul(lw.wo, s_.att, n_, s_.xn, pool_);
    cpu::add(s_.x, s_.xn, n_ * c_.n_embd, pool_);
  }

  // Serial on purpose: two tokens naming the same slot (a caller's bug) must not race.
  // Rows are converted to the cache's type as they are stored.
  void write_kv(int64_t l) {
    const int64_t row = c_.kv_dim();
    for (int64_t t = 0; t < n_; ++t) kv_.store(l, s_.slots[t], s_.k + t * row, s_.v + t * row);
  }

  void ffn_block(int64_t l) {
    const LayerWeights& lw = w_.layers[l];
    cpu::rmsnorm(s_.x, lw.ffn_norm.data(), s_.xn, n_, c_.n_embd, c_.norm_eps, pool_);
    const cpu::MatmulOutput gate_up[] = {{&lw.w_gate, s_.gate}, {&lw.w_up, s_.up}};
    cpu::matmul_shared_input(gate_up, s_.xn, n_, pool_);
    cpu::silu_mul(s_.gate, s_.up, n_, c_.n_ff, pool_);
    cpu::matmul(lw.w_down, s_.gate, n_, s_.xn, pool_);
    cpu::add(s_.x, s_.xn, n_ * c_.n_embd, pool_);
  }

  // Final norm and output matrix for the requested rows only, gathered into xn.
  void output(float* logits) {
    const int64_t n_rows = static_cast<int64_t>(b_.logit_rows.size());
    if (n_rows == 0) return;
    for (int64_t i = 0; i < n_rows; ++i)
      std::memcpy(s_.xn + i * c_.n_embd, s_.x + b_.logit_rows[i] * c_.n_embd, c_.n_embd * sizeof(float));
    cpu::rmsnorm(s_.xn, w_.output_norm.data(), s_.xn, n_rows, c_.n_embd, c_.norm_eps, pool_);
    cpu::matmul(w_.output, s_.xn, n_rows, logits, pool_);
  }

  const ModelConfig& c_;
  const ModelWeights& w_;
  const std::vector<float>& freqs_;
  const Batch& b_;
  KvStorage& kv_;
  ForwardScratch& s_;
  ThreadPool& pool_;
  const int64_t n_;
};

}  // namespace

Status Model::forward(const Batch& batch, KvStorage& kv, ForwardScratch& scratch, ThreadPool& pool,
                      float* logits) const {
  if (!scratch.fits(config_))
    return make_error(ErrorCode::kInvalidArgument, "forward: the scratch buffers were sized for another model");
  const KvStorageShape& ks = kv.shape();
  if (ks.n_layers != config_.n_layers || ks.n_kv_heads != config_.n_kv_heads || ks.head_dim != config_.head_dim)
    return make_error(ErrorCode::kInvalidArgument,
                      "forward: the KV cache holds {} layers x {} heads x {} dims, the model needs {} x {} x {}",
                      ks.n_layers, ks.n_kv_heads, ks.head_dim, config_.n_layers, config_.n_kv_heads,
                      config_.head_dim);
  const BatchLimits limits{config_.n_vocab, config_.context_length, ks.n_blocks, ks.block_size,
                           scratch.max_tokens()};
  TALLY_RETURN_IF_ERROR(validate_batch(batch, limits));
  if (!batch.logit_rows.empty() && logits == nullptr)
    return make_error(ErrorCode::kInvalidArgument, "forward: {} logit rows requested but no logits buffer",
                      batch.logit_rows.size());
  if (batch.n_tokens() == 0) return Status::ok_status();
  ForwardStep(*this, batch, kv, scratch, pool).run(logits);
  return Status::ok_status();
}

}  // namespace tally
