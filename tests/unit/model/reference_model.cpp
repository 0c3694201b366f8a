#include "reference_model.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>

#include "tensor/quantize.h"

namespace tally_test {

namespace {

void rmsnorm(std::vector<float>& o, const std::vector<float>& x, const std::vector<float>& w, float eps) {
  double ss = 0.0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const double scale = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  o.resize(x.size());
  for (size_t j = 0; j < x.size(); ++j) o[j] = static_cast<float>(w[j] * (scale * x[j]));
}

// Each head_size slice of vec normed on its own with w [head_size] (qwen3's q/k norms).
void rmsnorm_heads(std::vector<float>& vec, int head_size, const std::vector<float>& w, float eps) {
  std::vector<float> head, normed;
  for (size_t h = 0; h * head_size < vec.size(); ++h) {
    head.assign(vec.begin() + h * head_size, vec.begin() + (h + 1) * head_size);
    rmsnorm(normed, head, w, eps);
    std::copy(normed.begin(), normed.end(), vec.begin() + h * head_size);
  }
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

std::vector<float> RefModel::rows(const std::string& name, int first, int n_rows, int n_in) const {
  const auto all = tensor(name);
  return {all.begin() + static_cast<size_t>(first) * n_in, all.begin() + static_cast<size_t>(first + n_rows) * n_in};
}

std::vector<float> RefModel::matvec(const std::vector<float>& w, const std::vector<float>& x, int n_out) const {
  const size_t n = x.size();
  std::vector<float> out(n_out);
  for (int i = 0; i < n_out; ++i) {
    double val = 0.0;
    for (size_t j = 0; j < n; ++j) val += static_cast<double>(w[i * n + j]) * x[j];
    out[i] = static_cast<float>(val);
  }
  return out;
}

// YaRN as Hugging Face's _compute_yarn_parameters writes it: the correction range from the
// dims that turn beta_fast / beta_slow times over the original context, a linear ramp between
// them over the pair index, the extrapolated frequency where the ramp is 0 and the
// interpolated one (divided by the factor) where it is 1.
void RefModel::rope_scaled(float* vec, int n_heads, int pos) const {
  const int hs = s_.head_size, half = hs / 2;
  std::vector<double> freq(half);
  for (int i = 0; i < half; ++i) freq[i] = 1.0 / std::pow(static_cast<double>(s_.freq_base), 2.0 * i / hs);
  if (!s_.rope_divisors.empty())
    for (int i = 0; i < half; ++i) freq[i] /= s_.rope_divisors[i];
  if (s_.yarn_factor > 0) {
    const auto correction_dim = [&](double rotations) {
      return hs * std::log(s_.yarn_orig_ctx / (rotations * 2 * M_PI)) / (2 * std::log(static_cast<double>(s_.freq_base)));
    };
    const double low = std::max(std::floor(correction_dim(s_.yarn_beta_fast)), 0.0);
    double high = std::min(std::ceil(correction_dim(s_.yarn_beta_slow)), hs - 1.0);
    if (low == high) high += 0.001;
    for (int i = 0; i < half; ++i) {
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      const double extrapolation = (1 - ramp) * s_.yarn_ext_factor;
      freq[i] = freq[i] / s_.yarn_factor * (1 - extrapolation) + freq[i] * extrapolation;
    }
  }
  for (int h = 0; h < n_heads; ++h) {
    float* head = vec + h * hs;
    for (int i = 0; i < half; ++i) {
      const double angle = pos * freq[i];
      const double c = std::cos(angle) * s_.rope_mscale, sn = std::sin(angle) * s_.rope_mscale;
      float& a = s_.neox ? head[i] : head[2 * i];
      float& b = s_.neox ? head[i + half] : head[2 * i + 1];
      const double v0 = a, v1 = b;
      a = static_cast<float>(v0 * c - v1 * sn);
      b = static_cast<float>(v0 * sn + v1 * c);
    }
  }
}

void RefModel::rope(float* vec, int n_heads, int pos, bool local) const {
  if (!local && (s_.yarn_factor > 0 || !s_.rope_divisors.empty() || s_.rope_mscale != 1))
    return rope_scaled(vec, n_heads, pos);
  const int hs = s_.head_size;
  const float base = local && s_.local_freq_base > 0 ? s_.local_freq_base : s_.freq_base;
  const float linear = local ? 1.0f : s_.rope_linear_factor;
  for (int h = 0; h < n_heads; ++h) {
    float* head = vec + h * hs;
    for (int i = 0; i < hs / 2; ++i) {
      const float freq = 1.0f / powf(base, static_cast<float>(2 * i) / static_cast<float>(hs)) / linear;
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
  std::vector<double> att(pos + 1), acc(hs);
  const int first = local_layer(l) && pos + 1 > s_.window ? pos + 1 - s_.window : 0;
  const double divisor = s_.score_divisor > 0 ? s_.score_divisor : std::sqrt(static_cast<double>(hs));
  for (int h = 0; h < s_.heads; ++h) {
    const float* qh = q.data() + h * hs;
    for (int t = first; t <= pos; ++t) {
      const float* k = k_cache_[l].data() + t * kv_dim + (h / rep) * hs;
      double score = 0.0;
      for (int i = 0; i < hs; ++i) score += static_cast<double>(qh[i]) * k[i];
      att[t] = score / divisor;
      if (s_.attn_softcap > 0) att[t] = s_.attn_softcap * std::tanh(att[t] / s_.attn_softcap);
    }
    double max_val = att[first];
    for (int t = first + 1; t <= pos; ++t) max_val = std::max(max_val, att[t]);
    double sum = 0.0;
    for (int t = first; t <= pos; ++t) sum += (att[t] = std::exp(att[t] - max_val));
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int t = first; t <= pos; ++t) {
      const float* v = v_cache_[l].data() + t * kv_dim + (h / rep) * hs;
      for (int i = 0; i < hs; ++i) acc[i] += att[t] / sum * v[i];
    }
    for (int i = 0; i < hs; ++i) out[h * hs + i] = static_cast<float>(acc[i]);
  }
}

bool RefModel::local_layer(int l) const {
  if (s_.window <= 0) return false;
  return s_.all_local || (s_.swa_period > 0 && l % s_.swa_period != s_.swa_period - 1);
}

void RefModel::attention_block(int l, int pos, std::vector<float>& x) {
  const int dim = s_.dim, kv_dim = s_.kv_heads * s_.head_size, q_dim = s_.heads * s_.head_size;
  const std::string p = "blk." + std::to_string(l) + ".";
  std::vector<float> xb, att;
  rmsnorm(xb, x, tensor(p + "attn_norm.weight"), s_.eps);
  const std::string qkv = p + "attn_qkv.weight";
  auto q = matvec(s_.fused ? rows(qkv, 0, q_dim, dim) : tensor(p + "attn_q.weight"), xb, q_dim);
  auto k = matvec(s_.fused ? rows(qkv, q_dim, kv_dim, dim) : tensor(p + "attn_k.weight"), xb, kv_dim);
  auto v = matvec(s_.fused ? rows(qkv, q_dim + kv_dim, kv_dim, dim) : tensor(p + "attn_v.weight"), xb, kv_dim);
  if (s_.biases) {
    const auto bq = tensor(p + "attn_q.bias"), bk = tensor(p + "attn_k.bias"), bv = tensor(p + "attn_v.bias");
    for (int i = 0; i < q_dim; ++i) q[i] += bq[i];
    for (int i = 0; i < kv_dim; ++i) k[i] += bk[i];
    for (int i = 0; i < kv_dim; ++i) v[i] += bv[i];
  }
  if (s_.qk_norm) {
    rmsnorm_heads(q, s_.head_size, tensor(p + "attn_q_norm.weight"), s_.eps);
    rmsnorm_heads(k, s_.head_size, tensor(p + "attn_k_norm.weight"), s_.eps);
  }
  const bool local = local_layer(l);
  rope(q.data(), s_.heads, pos, local);
  rope(k.data(), s_.kv_heads, pos, local);
  std::copy(k.begin(), k.end(), k_cache_[l].begin() + pos * kv_dim);
  std::copy(v.begin(), v.end(), v_cache_[l].begin() + pos * kv_dim);
  attend(l, pos, q, att);
  auto o = matvec(tensor(p + "attn_output.weight"), att, dim);
  if (s_.post_norms) rmsnorm(o, std::vector<float>(o), tensor(p + "post_attention_norm.weight"), s_.eps);
  for (int i = 0; i < dim; ++i) x[i] += o[i];
}

std::vector<double> RefModel::swiglu(const std::vector<float>& gate, const std::vector<float>& up,
                                     const std::vector<float>& down, const std::vector<float>& xb,
                                     int hidden) const {
  const auto g = matvec(gate, xb, hidden), u = matvec(up, xb, hidden);
  std::vector<float> h(hidden);
  for (int i = 0; i < hidden; ++i) h[i] = static_cast<float>(g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i]);
  const auto d = matvec(down, h, s_.dim);
  return {d.begin(), d.end()};
}

// Hugging Face's Qwen2MoeSparseMoeBlock / MixtralSparseMoeBlock, one token at a time.
std::vector<double> RefModel::moe_ffn(int l, const std::vector<float>& xb) const {
  const std::string p = "blk." + std::to_string(l) + ".";
  const int dim = s_.dim, hidden = s_.n_ff_exp;
  const auto logits = matvec(tensor(p + "ffn_gate_inp.weight"), xb, s_.n_expert);
  double max_logit = logits[0], sum = 0.0;
  for (float v : logits) max_logit = std::max(max_logit, static_cast<double>(v));
  std::vector<double> probs(s_.n_expert);
  for (int e = 0; e < s_.n_expert; ++e) sum += (probs[e] = std::exp(logits[e] - max_logit));
  for (double& v : probs) v /= sum;
  std::vector<int> order(s_.n_expert);
  for (int e = 0; e < s_.n_expert; ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return probs[a] > probs[b]; });
  double chosen_sum = 0.0;
  for (int j = 0; j < s_.n_used; ++j) chosen_sum += probs[order[j]];
  std::vector<double> out(dim, 0.0);
  for (int j = 0; j < s_.n_used; ++j) {
    const int e = order[j];
    const double weight = s_.moe_norm ? probs[e] / chosen_sum : probs[e];
    const auto y = swiglu(rows(p + "ffn_gate_exps.weight", e * hidden, hidden, dim),
                          rows(p + "ffn_up_exps.weight", e * hidden, hidden, dim),
                          rows(p + "ffn_down_exps.weight", e * dim, dim, hidden), xb, hidden);
    for (int i = 0; i < dim; ++i) out[i] += weight * y[i];
  }
  if (s_.n_ff_shexp > 0) {
    const auto gate_logit = matvec(tensor(p + "ffn_gate_inp_shexp.weight"), xb, 1)[0];
    const double gate = 1.0 / (1.0 + std::exp(-static_cast<double>(gate_logit)));
    const auto y = swiglu(tensor(p + "ffn_gate_shexp.weight"), tensor(p + "ffn_up_shexp.weight"),
                          tensor(p + "ffn_down_shexp.weight"), xb, s_.n_ff_shexp);
    for (int i = 0; i < dim; ++i) out[i] += gate * y[i];
  }
  return out;
}

void RefModel::ffn_block(int l, std::vector<float>& x) const {
  const std::string p = "blk." + std::to_string(l) + ".";
  std::vector<float> xb;
  rmsnorm(xb, x, tensor(p + "ffn_norm.weight"), s_.eps);
  if (s_.n_expert > 0) {
    const auto moe = moe_ffn(l, xb);
    for (int i = 0; i < s_.dim; ++i) x[i] = static_cast<float>(x[i] + moe[i]);
    return;
  }
  const std::string up = p + "ffn_up.weight";
  auto h1 = matvec(s_.fused ? rows(up, 0, s_.hidden, s_.dim) : tensor(p + "ffn_gate.weight"), xb, s_.hidden);
  const auto h3 = matvec(s_.fused ? rows(up, s_.hidden, s_.hidden, s_.dim) : tensor(up), xb, s_.hidden);
  for (int i = 0; i < s_.hidden; ++i) {
    const double g = h1[i];
    const double act = s_.gelu ? 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g)))
                               : g / (1.0 + std::exp(-g));
    h1[i] = static_cast<float>(act * h3[i]);
  }
  auto down = matvec(tensor(p + "ffn_down.weight"), h1, s_.dim);
  if (s_.post_norms) rmsnorm(down, std::vector<float>(down), tensor(p + "post_ffw_norm.weight"), s_.eps);
  for (int i = 0; i < s_.dim; ++i) x[i] += down[i];
}

std::vector<float> RefModel::step(int token, int pos) {
  EXPECT_LT(pos, max_seq_);
  const int dim = s_.dim;
  const auto embd = tensor("token_embd.weight");
  std::vector<float> x(embd.begin() + token * dim, embd.begin() + (token + 1) * dim);
  if (s_.embd_scale)
    for (float& v : x) v = static_cast<float>(v * std::sqrt(static_cast<double>(dim)));
  for (int l = 0; l < s_.layers; ++l) {
    attention_block(l, pos, x);
    ffn_block(l, x);
  }
  std::vector<float> xb;
  rmsnorm(xb, x, tensor("output_norm.weight"), s_.eps);
  auto logits = matvec(tensor(s_.tied ? "token_embd.weight" : "output.weight"), xb, s_.vocab);
  if (s_.final_softcap > 0)
    for (float& v : logits) v = static_cast<float>(s_.final_softcap * std::tanh(v / s_.final_softcap));
  return logits;
}

}  // namespace tally_test
