#include "model/model_config.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/gguf_hparams.h"
#include "io/gguf_tensor_names.h"

namespace tally {

namespace {

constexpr int64_t kMaxDim = io::kMaxHparamDim;

// The keys only the model reads (the shared shape keys are io/gguf_hparams.h's).
struct KeyReader {
  const io::GgufFile& gguf;
  std::string_view arch;

  std::string key(std::string_view suffix) const { return io::gguf_arch_key(arch, suffix); }
  Result<int64_t> dim(std::string_view suffix) const {
    auto v = io::gguf_arch_dim(gguf, arch, suffix);
    return v.ok() ? v : v.status().with_context("model");
  }
  Result<int64_t> dim_or(std::string_view suffix, int64_t fallback) const {
    auto v = io::gguf_arch_dim_or(gguf, arch, suffix, fallback);
    return v.ok() ? v : v.status().with_context("model");
  }
  Result<float> positive_float_or(std::string_view suffix, double fallback) const {
    TALLY_ASSIGN_OR_RETURN(double v, gguf.get_float_or(key(suffix), fallback));
    if (!(v > 0.0) || !std::isfinite(v))
      return make_error(ErrorCode::kFormat, "model: key '{}' = {} must be positive", key(suffix), v);
    return static_cast<float>(v);
  }
};

Status read_yarn_keys(const KeyReader& r, RopeScaling& s) {
  TALLY_ASSIGN_OR_RETURN(s.original_context_length, r.dim("rope.scaling.original_context_length"));
  TALLY_ASSIGN_OR_RETURN(const double ext, r.gguf.get_float_or(r.key("rope.scaling.yarn_ext_factor"), 1.0));
  if (!(ext >= 0.0 && ext <= 1.0))
    return make_error(ErrorCode::kFormat, "model: key '{}' = {} must be in [0, 1]",
                      r.key("rope.scaling.yarn_ext_factor"), ext);
  s.ext_factor = static_cast<float>(ext);
  TALLY_ASSIGN_OR_RETURN(s.beta_fast, r.positive_float_or("rope.scaling.yarn_beta_fast", 32.0));
  TALLY_ASSIGN_OR_RETURN(s.beta_slow, r.positive_float_or("rope.scaling.yarn_beta_slow", 1.0));
  if (!(s.beta_fast > s.beta_slow))
    return make_error(ErrorCode::kFormat, "model: yarn rope scaling needs yarn_beta_fast {} > yarn_beta_slow {}",
                      s.beta_fast, s.beta_slow);
  TALLY_ASSIGN_OR_RETURN(const float yarn_attn, r.positive_float_or("rope.scaling.yarn_attn_factor", 1.0));
  s.attn_factor *= yarn_attn;
  if (s.ext_factor != 0.0f) s.attn_factor *= 1.0f + 0.1f * std::log(s.factor);
  return Status::ok_status();
}

Status read_rope_scaling(const KeyReader& r, ModelConfig& c) {
  TALLY_ASSIGN_OR_RETURN(c.rope_scaling.factor, r.positive_float_or("rope.scaling.factor", 1.0));
  // Older files give a linear factor as rope.scale_linear.
  if (!r.gguf.find(r.key("rope.scaling.factor")) && r.gguf.find(r.key("rope.scale_linear"))) {
    TALLY_ASSIGN_OR_RETURN(c.rope_scaling.factor, r.positive_float_or("rope.scale_linear", 1.0));
    c.rope_scaling.type = RopeScalingType::kLinear;
  }
  TALLY_ASSIGN_OR_RETURN(c.rope_scaling.attn_factor, r.positive_float_or("rope.scaling.attn_factor", 1.0));
  const bool llama3_keys = r.gguf.find(r.key("rope.scaling.low_freq_factor")) ||
                           r.gguf.find(r.key("rope.scaling.high_freq_factor"));
  std::string_view type = llama3_keys ? "llama3" : "none";
  if (r.gguf.find(r.key("rope.scaling.type"))) {
    TALLY_ASSIGN_OR_RETURN(type, r.gguf.get_string(r.key("rope.scaling.type")));
  }
  if (type == "linear") {
    c.rope_scaling.type = RopeScalingType::kLinear;
  } else if (type == "llama3") {
    auto& s = c.rope_scaling;
    s.type = RopeScalingType::kLlama3;
    TALLY_ASSIGN_OR_RETURN(s.original_context_length, r.dim("rope.scaling.original_context_length"));
    TALLY_ASSIGN_OR_RETURN(s.low_freq_factor, r.positive_float_or("rope.scaling.low_freq_factor", 1.0));
    TALLY_ASSIGN_OR_RETURN(s.high_freq_factor, r.positive_float_or("rope.scaling.high_freq_factor", 4.0));
    if (!(s.high_freq_factor > s.low_freq_factor))
      return make_error(ErrorCode::kFormat, "model: llama3 rope scaling needs high_freq_factor {} > low_freq_factor {}",
                        s.high_freq_factor, s.low_freq_factor);
  } else if (type == "yarn") {
    c.rope_scaling.type = RopeScalingType::kYarn;
    TALLY_RETURN_IF_ERROR(read_yarn_keys(r, c.rope_scaling));
  } else if (type == "longrope" || type == "su") {
    c.has_longrope = true;  // the factors are tensors: read_longrope checks they are there
  } else if (type != "none") {
    return make_error(ErrorCode::kUnsupported,
                      "model: key '{}' = '{}' is not supported (none, linear, llama3, yarn, longrope)",
                      r.key("rope.scaling.type"), type);
  }
  return Status::ok_status();
}

// LongRoPE (phi3): both factor tensors, the original context they switch at, and the attention
// factor of Hugging Face's Phi-3 when the file does not give one (llama.cpp's converter writes
// rope.scaling.attn_factor).
Status read_longrope(const KeyReader& r, ModelConfig& c) {
  using io::GgufTensor;
  const bool has_long = r.gguf.find_tensor(io::gguf_tensor_name(GgufTensor::kRopeFactorsLong)) != nullptr;
  const bool has_short = r.gguf.find_tensor(io::gguf_tensor_name(GgufTensor::kRopeFactorsShort)) != nullptr;
  if (!has_long && !has_short) {
    if (c.has_longrope)
      return make_error(ErrorCode::kNotFound, "model: tensor '{}' not found (key '{}' is longrope)",
                        io::gguf_tensor_name(GgufTensor::kRopeFactorsLong), r.key("rope.scaling.type"));
    return Status::ok_status();
  }
  if (has_long != has_short)
    return make_error(ErrorCode::kNotFound, "model: tensor '{}' not found (LongRoPE needs both factor tensors)",
                      io::gguf_tensor_name(has_long ? GgufTensor::kRopeFactorsShort : GgufTensor::kRopeFactorsLong));
  if (c.has_rope_freqs || c.rope_scaling.type != RopeScalingType::kNone)
    return make_error(ErrorCode::kUnsupported, "model: LongRoPE factor tensors with another rope scaling");
  c.has_longrope = true;
  auto& s = c.rope_scaling;
  TALLY_ASSIGN_OR_RETURN(s.original_context_length,
                         r.dim_or("rope.scaling.original_context_length", c.context_length));
  if (!r.gguf.find(r.key("rope.scaling.attn_factor")) && c.context_length > s.original_context_length &&
      s.original_context_length > 1) {
    const double scale = static_cast<double>(c.context_length) / static_cast<double>(s.original_context_length);
    s.attn_factor = static_cast<float>(
        std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(s.original_context_length))));
  }
  return Status::ok_status();
}

// The gemma keys: window, soft-caps and the query scale (ArchTraits' defaults).
Status read_gemma_keys(const KeyReader& r, ModelConfig& c) {
  const ArchTraits& a = *c.arch;
  if (a.swa_period > 0) {
    if (a.default_window > 0) {
      TALLY_ASSIGN_OR_RETURN(c.sliding_window, r.dim_or("attention.sliding_window", a.default_window));
    } else {
      TALLY_ASSIGN_OR_RETURN(c.sliding_window, r.dim("attention.sliding_window"));
    }
  }
  if (a.default_attn_softcap > 0.0f) {
    TALLY_ASSIGN_OR_RETURN(c.attn_softcap, r.positive_float_or("attn_logit_softcapping", a.default_attn_softcap));
  }
  if (a.default_final_softcap > 0.0f || r.gguf.find(r.key("final_logit_softcapping"))) {
    TALLY_ASSIGN_OR_RETURN(c.final_softcap,
                           r.positive_float_or("final_logit_softcapping", a.default_final_softcap));
  }
  if (a.wide_query_scale_layers > 0) {
    const bool wide = c.n_layers == a.wide_query_scale_layers;
    c.attn_score_divisor = std::sqrt(static_cast<float>(wide ? c.n_embd / c.n_heads : c.head_dim));
  }
  return Status::ok_status();
}

// The expert counts and widths (io/gguf_hparams.h) where the file declares experts.
Status read_moe_keys(const KeyReader& r, ModelConfig& c) {
  auto moe = io::gguf_read_moe_hparams(r.gguf, r.arch, c.n_ff);
  if (!moe.ok()) return moe.status().with_context("model");
  if (moe->n_expert == 0) {
    if (c.arch->moe_required)
      return make_error(ErrorCode::kNotFound, "model: key '{}' not found (architecture '{}' is a mixture of experts)",
                        r.key("expert_count"), r.arch);
    return Status::ok_status();
  }
  if (!c.arch->moe_required && !c.arch->moe_optional)
    return make_error(ErrorCode::kUnsupported, "model: architecture '{}' with experts ({} = {}) is not supported",
                      r.arch, r.key("expert_count"), moe->n_expert);
  c.n_expert = moe->n_expert;
  c.n_expert_used = moe->n_expert_used;
  c.n_ff_exp = moe->n_ff_exp;
  c.n_ff_shexp = c.arch->moe_shared_expert ? moe->n_ff_shexp : 0;
  return Status::ok_status();
}

Status check_consistency(const ModelConfig& c) {
  if (c.n_heads % c.n_kv_heads != 0)
    return make_error(ErrorCode::kFormat, "model: head_count {} is not a multiple of head_count_kv {}",
                      c.n_heads, c.n_kv_heads);
  if (c.rope_dim % 2 != 0 || c.rope_dim > c.head_dim)
    return make_error(ErrorCode::kFormat, "model: rope.dimension_count {} must be even and at most the head size {}",
                      c.rope_dim, c.head_dim);
  if (c.q_dim() > kMaxDim)
    return make_error(ErrorCode::kFormat, "model: {} heads of {} dims is too large", c.n_heads, c.head_dim);
  return Status::ok_status();
}

}  // namespace

Result<ModelConfig> model_config_from_gguf(const io::GgufFile& gguf) {
  TALLY_ASSIGN_OR_RETURN(std::string_view arch_name, gguf.get_string("general.architecture"));
  ModelConfig c;
  c.arch = find_arch(arch_name);
  if (!c.arch) {
    std::string names;
    for (const auto& a : supported_archs()) names += fmt::format("{}{}", names.empty() ? "" : ", ", a.name);
    return make_error(ErrorCode::kUnsupported, "model: architecture '{}' is not supported ({})", arch_name, names);
  }
  const KeyReader r{gguf, c.arch->name};
  auto hparams = io::gguf_read_hparams(gguf);
  if (!hparams.ok()) return hparams.status().with_context("model");
  io::gguf_hparams_copy(*hparams, c);
  c.sliding_window = hparams->full_window;  // gemma's pattern reads its own below
  TALLY_ASSIGN_OR_RETURN(const int64_t v_dim, r.dim_or("attention.value_length", c.head_dim));
  if (v_dim != c.head_dim)
    return make_error(ErrorCode::kUnsupported, "model: value_length {} differs from key_length {}", v_dim, c.head_dim);
  TALLY_ASSIGN_OR_RETURN(c.rope_freq_base, r.positive_float_or("rope.freq_base", 10000.0));
  if (!gguf.find(r.key("attention.layer_norm_rms_epsilon")))
    return make_error(ErrorCode::kNotFound, "model: key '{}' not found", r.key("attention.layer_norm_rms_epsilon"));
  TALLY_ASSIGN_OR_RETURN(c.norm_eps, r.positive_float_or("attention.layer_norm_rms_epsilon", 0.0));
  TALLY_RETURN_IF_ERROR(read_rope_scaling(r, c));
  TALLY_RETURN_IF_ERROR(read_gemma_keys(r, c));
  TALLY_RETURN_IF_ERROR(read_moe_keys(r, c));
  TALLY_RETURN_IF_ERROR(check_consistency(c));

  using io::GgufTensor;
  const std::string embd_name = io::gguf_tensor_name(GgufTensor::kTokenEmbd);
  const io::GgufTensorInfo* embd = gguf.find_tensor(embd_name);
  if (!embd) return make_error(ErrorCode::kNotFound, "model: tensor 'token_embd.weight' not found");
  if (embd->dims.size() != 2 || embd->dims[0] != c.n_embd || embd->dims[1] <= 0 || embd->dims[1] > kMaxDim)
    return make_error(ErrorCode::kFormat, "model: tensor 'token_embd.weight' has shape {}, expected [{}, n_vocab]",
                      fmt::join(embd->dims, ", "), c.n_embd);
  c.n_vocab = embd->dims[1];
  if (gguf.find(r.key("vocab_size"))) {
    TALLY_ASSIGN_OR_RETURN(const int64_t declared, gguf.get_int(r.key("vocab_size")));
    if (declared != c.n_vocab)
      return make_error(ErrorCode::kFormat, "model: key '{}' = {} but token_embd.weight has {} rows",
                        r.key("vocab_size"), declared, c.n_vocab);
  }
  c.tied_output = gguf.find_tensor(io::gguf_tensor_name(GgufTensor::kOutput)) == nullptr;
  c.has_rope_freqs = gguf.find_tensor(io::gguf_tensor_name(GgufTensor::kRopeFreqs)) != nullptr;
  TALLY_RETURN_IF_ERROR(read_longrope(r, c));
  return c;
}

}  // namespace tally
