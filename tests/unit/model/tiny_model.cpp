#include "tiny_model.h"

#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "tensor/quantize.h"

namespace tally_test {

namespace {

using tally::DType;

class Builder {
 public:
  Builder(const TinySpec& s) : s_(s), rng_(s.seed) {}

  void key_u32(const std::string& suffix, uint32_t v) {
    if (!s_.skip_keys.count(suffix)) w_.set_u32(s_.arch + "." + suffix, v);
  }
  void key_f32(const std::string& suffix, float v) {
    if (!s_.skip_keys.count(suffix)) w_.set_f32(s_.arch + "." + suffix, v);
  }
  void tensor(const std::string& name, DType type, std::vector<int64_t> dims, float mean, float stddev) {
    if (s_.skip_tensors.count(name)) return;
    const auto st = w_.add_tensor(name, type, dims, random_bytes(type, dims, mean, stddev));
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  void matrix(const std::string& name, int64_t n_in, int64_t n_out) {
    tensor(name, s_.matrix_type, {n_in, n_out}, 0.0f, 1.0f / std::sqrt(static_cast<float>(n_in)));
  }
  // n_expert matrices [n_out][n_in] one after another: ggml dims [n_in, n_out, n_expert]; with
  // split_experts the same values as one [n_in, n_out] tensor per expert, named by `split`.
  void experts(const std::string& name, int64_t n_in, int64_t n_out, int64_t n_expert,
               const std::function<std::string(int64_t)>& split) {
    const float stddev = 1.0f / std::sqrt(static_cast<float>(n_in));
    if (!s_.split_experts) return tensor(name, s_.matrix_type, {n_in, n_out, n_expert}, 0.0f, stddev);
    const auto bytes = random_bytes(s_.matrix_type, {n_in, n_out, n_expert}, 0.0f, stddev);
    const size_t per_expert = bytes.size() / static_cast<size_t>(n_expert);
    for (int64_t e = 0; e < n_expert; ++e) {
      if (s_.skip_tensors.count(split(e))) continue;
      const auto st = w_.add_tensor(split(e), s_.matrix_type, {n_in, n_out},
                                    {bytes.data() + e * per_expert, per_expert});
      EXPECT_TRUE(st.ok()) << st.to_string();
    }
  }
  tally::io::GgufWriter& writer() { return w_; }

 private:
  std::vector<uint8_t> random_bytes(DType type, const std::vector<int64_t>& dims, float mean, float stddev) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::normal_distribution<float> dist(mean, stddev);
    std::vector<float> values(n);
    for (auto& v : values) v = dist(rng_);
    std::vector<uint8_t> bytes(tally::dtype_row_bytes(type, n));
    tally::quantize_row(type, values.data(), bytes.data(), n);
    return bytes;
  }

  const TinySpec& s_;
  std::mt19937 rng_;
  tally::io::GgufWriter w_;
};

// The router, the experts and the shared expert of one block (prefix p = "blk.N.").
void add_moe_ffn(Builder& b, const TinySpec& s, const std::string& p) {
  const int64_t n_ff_exp = s.n_ff_exp > 0 ? s.n_ff_exp : s.n_ff;
  b.matrix(p + "ffn_gate_inp.weight", s.n_embd, s.n_expert);
  const auto split = [&p](const char* stem) {
    return [&p, stem](int64_t e) { return p + stem + "." + std::to_string(e) + ".weight"; };
  };
  b.experts(p + "ffn_gate_exps.weight", s.n_embd, n_ff_exp, s.n_expert, split("ffn_gate"));
  b.experts(p + "ffn_up_exps.weight", s.n_embd, n_ff_exp, s.n_expert, split("ffn_up"));
  b.experts(p + "ffn_down_exps.weight", n_ff_exp, s.n_embd, s.n_expert, split("ffn_down"));
  if (s.n_ff_shexp > 0) {
    b.tensor(p + "ffn_gate_inp_shexp.weight", DType::kF32, {s.n_embd}, 0.0f, 0.3f);
    b.matrix(p + "ffn_gate_shexp.weight", s.n_embd, s.n_ff_shexp);
    b.matrix(p + "ffn_up_shexp.weight", s.n_embd, s.n_ff_shexp);
    b.matrix(p + "ffn_down_shexp.weight", s.n_ff_shexp, s.n_embd);
  }
}

}  // namespace

std::vector<uint8_t> make_tiny_gguf(const TinySpec& s) {
  Builder b(s);
  b.writer().set_string("general.architecture", s.arch);
  b.key_u32("context_length", static_cast<uint32_t>(s.context_length));
  b.key_u32("embedding_length", static_cast<uint32_t>(s.n_embd));
  b.key_u32("feed_forward_length", static_cast<uint32_t>(s.n_ff));
  b.key_u32("block_count", static_cast<uint32_t>(s.n_layers));
  b.key_u32("attention.head_count", static_cast<uint32_t>(s.n_heads));
  b.key_u32("attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  b.key_u32("attention.key_length", static_cast<uint32_t>(s.head_dim));
  b.key_u32("rope.dimension_count", static_cast<uint32_t>(s.head_dim));
  b.key_f32("rope.freq_base", s.freq_base);
  b.key_f32("attention.layer_norm_rms_epsilon", s.eps);
  if (s.n_expert > 0) {
    b.key_u32("expert_count", static_cast<uint32_t>(s.n_expert));
    b.key_u32("expert_used_count", static_cast<uint32_t>(s.n_expert_used));
    if (s.n_ff_exp > 0) b.key_u32("expert_feed_forward_length", static_cast<uint32_t>(s.n_ff_exp));
    if (s.n_ff_shexp > 0) b.key_u32("expert_shared_feed_forward_length", static_cast<uint32_t>(s.n_ff_shexp));
  }
  if (s.extra) s.extra(b.writer());

  const int64_t q_dim = s.n_heads * s.head_dim, kv_dim = s.n_kv_heads * s.head_dim;
  b.tensor("token_embd.weight", DType::kF32, {s.n_embd, s.n_vocab}, 0.0f, 1.0f);
  b.tensor("output_norm.weight", s.vector_type, {s.n_embd}, 1.0f, 0.1f);
  if (!s.tied) b.matrix("output.weight", s.n_embd, s.n_vocab);
  for (int64_t l = 0; l < s.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    b.tensor(p + "attn_norm.weight", s.vector_type, {s.n_embd}, 1.0f, 0.1f);
    if (s.fused) {
      b.matrix(p + "attn_qkv.weight", s.n_embd, q_dim + 2 * kv_dim);
    } else {
      b.matrix(p + "attn_q.weight", s.n_embd, q_dim);
      b.matrix(p + "attn_k.weight", s.n_embd, kv_dim);
      b.matrix(p + "attn_v.weight", s.n_embd, kv_dim);
    }
    if (s.biases) {
      b.tensor(p + "attn_q.bias", s.vector_type, {q_dim}, 0.0f, 0.2f);
      b.tensor(p + "attn_k.bias", s.vector_type, {kv_dim}, 0.0f, 0.2f);
      b.tensor(p + "attn_v.bias", s.vector_type, {kv_dim}, 0.0f, 0.2f);
    }
    if (s.qk_norm) {
      b.tensor(p + "attn_q_norm.weight", s.vector_type, {s.head_dim}, 1.0f, 0.3f);
      b.tensor(p + "attn_k_norm.weight", s.vector_type, {s.head_dim}, 1.0f, 0.3f);
    }
    b.matrix(p + "attn_output.weight", q_dim, s.n_embd);
    if (s.post_norms) b.tensor(p + "post_attention_norm.weight", s.vector_type, {s.n_embd}, 1.0f, 0.3f);
    b.tensor(p + "ffn_norm.weight", s.vector_type, {s.n_embd}, 1.0f, 0.1f);
    if (s.n_expert > 0) {
      add_moe_ffn(b, s, p);
    } else {
      if (!s.fused) b.matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
      b.matrix(p + "ffn_up.weight", s.n_embd, s.fused ? 2 * s.n_ff : s.n_ff);
      b.matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
    }
    if (s.post_norms) b.tensor(p + "post_ffw_norm.weight", s.vector_type, {s.n_embd}, 1.0f, 0.3f);
  }
  return b.writer().to_bytes();
}

}  // namespace tally_test
