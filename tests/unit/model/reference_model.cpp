#include "reference_model.h"

#include <cmath>

#include <gtest/gtest.h>

#include "tensor/quantize.h"

namespace tally_test {

namespace {

void rmsnorm(std::vector<float>& o, const std::vector<float>& x, const std::vector<float>& w, float eps) {
  float ss = 0.0f;
  for (float v : x) ss += v * v;
  ss /= static_cast<float>(x.size());
  ss += eps;
  ss = 1.0f / sqrtf(ss);
  o.resize(x.size());
  for (size_t j = 0; j < x.size(); ++j) o[j] = w[j] * (ss * x[j]);
}

}  // namespace

RefModel::RefModel(const tally::io::GgufFile& gguf, const RefSpec& spec, int max_seq)
    : gguf_(gguf), s_(spec), max_seq_(max_seq) {
  const size_t kv_dim = static_cast<size_t>(s_.kv_heads * s_.head_size);
  k_cache_.assign(s_.layers, std::vector<float>(max_seq * kv_dim));
  v_cache_.assign(s_.layers, std::vector<float>(max_seq * kv_dim));
}

std::vector<float> RefModel::tensor(const std::string& name) const {
  const auto* t = gguf_.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  std::vector<float> out(t->n_elements());
  tally::dequantize_row(t->type, t->data, out.data(), t->n_elements());
  return out;
}

std::vector<float> RefModel::matvec(const std::vector<float>& w, const std::vector<float>& x, int n_out) const {
  const size_t n = x.size();
  std::vector<float> out(n_out);
  for (int i = 0; i < n_out; ++i) {
    float val = 0.0f;
    for (size_t j = 0; j < n; ++j) val += w[i * n + j] * x[j];
    out[i] = val;
  }
  return out;
}

void RefModel::rope(float* vec, int n_heads, int pos) const {
  const int hs = s_.head_size;
  for (int h = 0; h < n_heads; ++h) {
    float* head = vec + h * hs;
    for (int i = 0; i < hs / 2; ++i) {
      const float freq = 1.0f / powf(s_.freq_base, static_cast<float>(2 * i) / static_cast<float>(hs));
      const float val = pos * freq;
      const float fcr = cosf(val), fci = sinf(val);
      float& a = s_.neox ? head[i] : head[2 * i];
      float& b = s_.neox ? head[i + hs / 2] : head[2 * i + 1];
      const float v0 = a, v1 = b;
      a = v0 * fcr - v1 * fci;
      b = v0 * fci + v1 * fcr;
    }
  }
}

void RefModel::attend(int l, int pos, const std::vector<float>& q, std::vector<float>& out) const {
  const int hs = s_.head_size, kv_dim = s_.kv_heads * hs, rep = s_.heads / s_.kv_heads;
  out.assign(s_.heads * hs, 0.0f);
  std::vector<float> att(pos + 1);
  for (int h = 0; h < s_.heads; ++h) {
    const float* qh = q.data() + h * hs;
    for (int t = 0; t <= pos; ++t) {
      const float* k = k_cache_[l].data() + t * kv_dim + (h / rep) * hs;
      float score = 0.0f;
      for (int i = 0; i < hs; ++i) score += qh[i] * k[i];
      att[t] = score / sqrtf(static_cast<float>(hs));
    }
    float max_val = att[0];
    for (int t = 1; t <= pos; ++t) max_val = att[t] > max_val ? att[t] : max_val;
    float sum = 0.0f;
    for (int t = 0; t <= pos; ++t) sum += (att[t] = expf(att[t] - max_val));
    for (int t = 0; t <= pos; ++t) att[t] /= sum;
    for (int t = 0; t <= pos; ++t) {
      const float* v = v_cache_[l].data() + t * kv_dim + (h / rep) * hs;
      for (int i = 0; i < hs; ++i) out[h * hs + i] += att[t] * v[i];
    }
  }
}

std::vector<float> RefModel::step(int token, int pos) {
  EXPECT_LT(pos, max_seq_);
  const int dim = s_.dim, kv_dim = s_.kv_heads * s_.head_size, q_dim = s_.heads * s_.head_size;
  const auto embd = tensor("token_embd.weight");
  std::vector<float> x(embd.begin() + token * dim, embd.begin() + (token + 1) * dim);
  std::vector<float> xb, att;
  for (int l = 0; l < s_.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    rmsnorm(xb, x, tensor(p + "attn_norm.weight"), s_.eps);
    auto q = matvec(tensor(p + "attn_q.weight"), xb, q_dim);
    auto k = matvec(tensor(p + "attn_k.weight"), xb, kv_dim);
    auto v = matvec(tensor(p + "attn_v.weight"), xb, kv_dim);
    if (s_.biases) {
      const auto bq = tensor(p + "attn_q.bias"), bk = tensor(p + "attn_k.bias"), bv = tensor(p + "attn_v.bias");
      for (int i = 0; i < q_dim; ++i) q[i] += bq[i];
      for (int i = 0; i < kv_dim; ++i) k[i] += bk[i];
      for (int i = 0; i < kv_dim; ++i) v[i] += bv[i];
    }
    rope(q.data(), s_.heads, pos);
    rope(k.data(), s_.kv_heads, pos);
    std::copy(k.begin(), k.end(), k_cache_[l].begin() + pos * kv_dim);
    std::copy(v.begin(), v.end(), v_cache_[l].begin() + pos * kv_dim);
    attend(l, pos, q, att);
    const auto o = matvec(tensor(p + "attn_output.weight"), att, dim);
    for (int i = 0; i < dim; ++i) x[i] += o[i];
    rmsnorm(xb, x, tensor(p + "ffn_norm.weight"), s_.eps);
    auto h1 = matvec(tensor(p + "ffn_gate.weight"), xb, s_.hidden);
    const auto h3 = matvec(tensor(p + "ffn_up.weight"), xb, s_.hidden);
    for (int i = 0; i < s_.hidden; ++i) h1[i] = h1[i] * (1.0f / (1.0f + expf(-h1[i]))) * h3[i];
    const auto down = matvec(tensor(p + "ffn_down.weight"), h1, dim);
    for (int i = 0; i < dim; ++i) x[i] += down[i];
  }
  rmsnorm(xb, x, tensor("output_norm.weight"), s_.eps);
  return matvec(tensor(s_.tied ? "token_embd.weight" : "output.weight"), xb, s_.vocab);
}

}  // namespace tally_test
