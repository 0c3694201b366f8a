#include "model/hf_config.h"

#include <cmath>
#include <string_view>

#include <fmt/format.h>

namespace tally {

namespace {

using nlohmann::json;

struct HfArch {
  std::string_view hf_arch;     // config.json "architectures"[0]
  std::string_view model_type;  // config.json "model_type"
  std::string_view arch;        // GGUF general.architecture
};

constexpr HfArch kHfArchs[] = {
    {"LlamaForCausalLM", "llama", "llama"},
    {"MistralForCausalLM", "mistral", "llama"},
    {"MixtralForCausalLM", "mixtral", "llama"},
    {"Qwen2ForCausalLM", "qwen2", "qwen2"},
    {"Qwen3ForCausalLM", "qwen3", "qwen3"},
    {"Qwen2MoeForCausalLM", "qwen2_moe", "qwen2moe"},
    {"Qwen3MoeForCausalLM", "qwen3_moe", "qwen3moe"},
    {"Gemma2ForCausalLM", "gemma2", "gemma2"},
    {"Gemma3ForCausalLM", "gemma3_text", "gemma3"},
    {"Phi3ForCausalLM", "phi3", "phi3"},
};

Status field_error(std::string_view key, const json& v, std::string_view expected) {
  return make_error(ErrorCode::kFormat, "config.json: '{}' is {} (expected {})", key, v.dump(), expected);
}

const json* find(const json& j, std::string_view key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

// A positive integer; fallback < 0: required.
Result<int64_t> int_field(const json& j, std::string_view key, int64_t fallback = -1) {
  const json* v = find(j, key);
  if (v == nullptr) {
    if (fallback >= 0) return fallback;
    return make_error(ErrorCode::kNotFound, "config.json: missing '{}'", key);
  }
  if (!v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > (int64_t{1} << 24))
    return field_error(key, *v, "a positive integer");
  return v->get<int64_t>();
}

Result<double> float_field(const json& j, std::string_view key, double fallback) {
  const json* v = find(j, key);
  if (v == nullptr) return fallback;
  if (!v->is_number() || !(v->get<double>() > 0.0) || !std::isfinite(v->get<double>()))
    return field_error(key, *v, "a positive number");
  return v->get<double>();
}

Result<bool> bool_field(const json& j, std::string_view key, bool fallback) {
  const json* v = find(j, key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) return field_error(key, *v, "true or false");
  return v->get<bool>();
}

Result<const HfArch*> find_hf_arch(const json& config) {
  std::string wanted;
  if (const json* a = find(config, "architectures")) {
    if (!a->is_array() || a->empty() || !(*a)[0].is_string())
      return field_error("architectures", *a, "a list of class names");
    wanted = (*a)[0].get<std::string>();
    for (const HfArch& h : kHfArchs)
      if (h.hf_arch == wanted) return &h;
  } else if (const json* t = find(config, "model_type"); t && t->is_string()) {
    wanted = t->get<std::string>();
    for (const HfArch& h : kHfArchs)
      if (h.model_type == wanted) return &h;
  } else {
    return make_error(ErrorCode::kNotFound, "config.json: neither 'architectures' nor 'model_type'");
  }
  std::string names;
  for (const HfArch& h : kHfArchs) names += fmt::format("{}{}", names.empty() ? "" : ", ", h.hf_arch);
  return make_error(ErrorCode::kUnsupported, "config.json: architecture '{}' is not supported ({})", wanted, names);
}

// llama.cpp's rope_freqs.weight for Llama 3.1's rope_scaling (per-pair divisors of the freqs).
std::vector<float> llama3_rope_factors(const json& s, double base, int64_t dim) {
  const double factor = s.value("factor", 8.0);
  const double low = s.value("low_freq_factor", 1.0);
  const double high = s.value("high_freq_factor", 4.0);
  const double old_ctx = s.value("original_max_position_embeddings", 8192.0);
  const double low_wavelen = old_ctx / low;
  const double high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (int64_t i = 0; i < dim; i += 2) {
    // torch float32 arithmetic, as the converter computes the frequencies.
    const float freq = 1.0f / std::pow(static_cast<float>(base), static_cast<float>(i) / static_cast<float>(dim));
    const double wavelen = 2.0 * M_PI / freq;
    double f = 1.0;
    if (wavelen < high_wavelen) {
      f = 1.0;
    } else if (wavelen > low_wavelen) {
      f = factor;
    } else {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

// YaRN: the keys llama.cpp's converter writes. The model multiplies its attention factor by
// (1 + 0.1 ln factor) itself, so an explicit attention_factor is stored divided by that.
Status read_yarn(const json& s, const json& config, const std::string& arch, io::GgufWriter& w) {
  TALLY_ASSIGN_OR_RETURN(const double factor, float_field(s, "factor", 1.0));
  if (!(factor > 0.0)) return field_error("rope_scaling.factor", s["factor"], "a positive number");
  TALLY_ASSIGN_OR_RETURN(const int64_t ctx, int_field(config, "max_position_embeddings", 0));
  TALLY_ASSIGN_OR_RETURN(const int64_t orig, int_field(s, "original_max_position_embeddings",
                                                       static_cast<int64_t>(static_cast<double>(ctx) / factor)));
  if (orig <= 0)
    return make_error(ErrorCode::kFormat, "config.json: yarn rope_scaling needs original_max_position_embeddings");
  TALLY_ASSIGN_OR_RETURN(const double beta_fast, float_field(s, "beta_fast", 32.0));
  TALLY_ASSIGN_OR_RETURN(const double beta_slow, float_field(s, "beta_slow", 1.0));
  w.set_string(arch + ".rope.scaling.type", "yarn");
  w.set_f32(arch + ".rope.scaling.factor", static_cast<float>(factor));
  w.set_u32(arch + ".rope.scaling.original_context_length", static_cast<uint32_t>(orig));
  w.set_f32(arch + ".rope.scaling.yarn_beta_fast", static_cast<float>(beta_fast));
  w.set_f32(arch + ".rope.scaling.yarn_beta_slow", static_cast<float>(beta_slow));
  if (const json* a = find(s, "attention_factor"); a != nullptr && !a->is_null()) {
    TALLY_ASSIGN_OR_RETURN(const double attn, float_field(s, "attention_factor", 1.0));
    if (!(attn > 0.0)) return field_error("rope_scaling.attention_factor", *a, "a positive number");
    w.set_f32(arch + ".rope.scaling.attn_factor", static_cast<float>(attn / (1.0 + 0.1 * std::log(factor))));
  }
  return Status::ok_status();
}

// phi3's LongRoPE: the two factor lists become rope_factors_long/short.weight (one factor per
// rotated pair), and rope.scaling.attn_factor is always written, as llama.cpp's converter
// writes it (Phi3MiniModel): sqrt(1 + ln(scale) / ln(original)) for scale = context / original
// above 1, else 1. A config's own attention_factor wins, as in Hugging Face's
// _compute_longrope_parameters (llama.cpp's converter ignores it).
Status read_longrope(const json& s, const json& config, int64_t rope_dim, io::GgufWriter& w, HfModelInfo& info) {
  for (const char* name : {"long_factor", "short_factor"}) {
    const json* f = find(s, name);
    if (f == nullptr || !f->is_array() || static_cast<int64_t>(f->size()) != rope_dim / 2)
      return make_error(ErrorCode::kFormat, "config.json: rope_scaling.{} must be a list of {} numbers", name,
                        rope_dim / 2);
    std::vector<float>& out = std::string_view(name) == "long_factor" ? info.rope_factors_long
                                                                       : info.rope_factors_short;
    for (const json& v : *f) {
      if (!v.is_number() || !(v.get<double>() > 0.0))
        return make_error(ErrorCode::kFormat, "config.json: rope_scaling.{} holds {}, not a positive number", name,
                          v.dump());
      out.push_back(static_cast<float>(v.get<double>()));
    }
  }
  w.set_string(info.arch + ".rope.scaling.type", "longrope");
  TALLY_ASSIGN_OR_RETURN(const int64_t ctx, int_field(config, "max_position_embeddings"));
  TALLY_ASSIGN_OR_RETURN(const int64_t orig, int_field(config, "original_max_position_embeddings", ctx));
  const double scale = static_cast<double>(ctx) / static_cast<double>(orig);
  const double derived =
      scale > 1.0 && orig > 1 ? std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(orig))) : 1.0;
  TALLY_ASSIGN_OR_RETURN(const double attn, float_field(s, "attention_factor", derived));
  w.set_f32(info.arch + ".rope.scaling.attn_factor", static_cast<float>(attn));
  return Status::ok_status();
}

Status read_rope_scaling(const json& config, const std::string& arch, double base, int64_t rope_dim,
                         io::GgufWriter& w, HfModelInfo& info) {
  const json* s = find(config, "rope_scaling");
  if (s == nullptr) return Status::ok_status();
  if (!s->is_object()) return field_error("rope_scaling", *s, "an object");
  std::string type = s->value("rope_type", s->value("type", std::string()));
  if (type.empty() || type == "default") return Status::ok_status();
  if (type == "linear") {
    TALLY_ASSIGN_OR_RETURN(const double factor, float_field(*s, "factor", 1.0));
    w.set_string(arch + ".rope.scaling.type", "linear");
    w.set_f32(arch + ".rope.scaling.factor", static_cast<float>(factor));
    return Status::ok_status();
  }
  if (type == "llama3" && arch == "llama") {
    info.rope_freqs = llama3_rope_factors(*s, base, rope_dim);
    return Status::ok_status();
  }
  if (type == "yarn") return read_yarn(*s, config, arch, w);
  if ((type == "longrope" || type == "su") && arch == "phi3") return read_longrope(*s, config, rope_dim, w, info);
  return make_error(ErrorCode::kUnsupported,
                    "config.json: rope_scaling type '{}' is not supported for {} (none, linear, llama3, "
                    "yarn; longrope for phi3)",
                    type, info.hf_arch);
}

// Gemma's sliding window, soft-caps and query scale.
Status read_gemma(const json& c, const std::string& arch, io::GgufWriter& w, const HfModelInfo& info) {
  const bool gemma3 = arch == "gemma3";
  TALLY_ASSIGN_OR_RETURN(const int64_t window, int_field(c, "sliding_window", gemma3 ? -1 : 4096));
  w.set_u32(arch + ".attention.sliding_window", static_cast<uint32_t>(window));
  if (const json* v = find(c, "attn_logit_softcapping")) {
    if (gemma3) return make_error(ErrorCode::kUnsupported, "config.json: gemma3 with attn_logit_softcapping");
    TALLY_ASSIGN_OR_RETURN(const double cap, float_field(c, "attn_logit_softcapping", 0.0));
    w.set_f32(arch + ".attn_logit_softcapping", static_cast<float>(cap));
    (void)v;
  }
  if (find(c, "final_logit_softcapping")) {
    TALLY_ASSIGN_OR_RETURN(const double cap, float_field(c, "final_logit_softcapping", 0.0));
    w.set_f32(arch + ".final_logit_softcapping", static_cast<float>(cap));
  }
  // tally (like llama.cpp) scales queries by 1/sqrt(head_dim), or by 1/sqrt(n_embd / n_heads)
  // for the 27B models; any other query_pre_attn_scalar cannot be carried by a GGUF.
  const int64_t wide_layers = gemma3 ? 62 : 46;
  const int64_t expected = info.n_layers == wide_layers ? info.n_embd / info.n_heads : info.head_dim;
  TALLY_ASSIGN_OR_RETURN(const int64_t scalar, int_field(c, "query_pre_attn_scalar", expected));
  if (scalar != expected)
    return make_error(ErrorCode::kUnsupported, "config.json: query_pre_attn_scalar {} (tally uses {} for this shape)",
                      scalar, expected);
  if (gemma3) {
    TALLY_ASSIGN_OR_RETURN(const double local_base, float_field(c, "rope_local_base_freq", 10000.0));
    TALLY_ASSIGN_OR_RETURN(const int64_t pattern, int_field(c, "sliding_window_pattern", 6));
    if (local_base != 10000.0 || pattern != 6)
      return make_error(ErrorCode::kUnsupported,
                        "config.json: gemma3 with rope_local_base_freq {} and sliding_window_pattern {} "
                        "(tally runs 10000 and 6)", local_base, pattern);
  }
  return Status::ok_status();
}

Status read_moe(const json& c, const std::string& arch, io::GgufWriter& w, HfModelInfo& info) {
  const bool mixtral = info.hf_arch == "MixtralForCausalLM";
  const bool qwen_moe = arch == "qwen2moe" || arch == "qwen3moe";
  if (!mixtral && !qwen_moe) return Status::ok_status();
  TALLY_ASSIGN_OR_RETURN(info.n_expert, int_field(c, mixtral ? "num_local_experts" : "num_experts"));
  TALLY_ASSIGN_OR_RETURN(const int64_t used, int_field(c, "num_experts_per_tok"));
  w.set_u32(arch + ".expert_count", static_cast<uint32_t>(info.n_expert));
  w.set_u32(arch + ".expert_used_count", static_cast<uint32_t>(used));
  info.mixtral_experts = mixtral;
  if (!qwen_moe) return Status::ok_status();
  TALLY_ASSIGN_OR_RETURN(const int64_t n_ff_exp, int_field(c, "moe_intermediate_size"));
  w.set_u32(arch + ".expert_feed_forward_length", static_cast<uint32_t>(n_ff_exp));
  // tally's qwen2moe does not renormalise the top-k weights, its qwen3moe does (arch.cpp).
  TALLY_ASSIGN_OR_RETURN(const bool norm_topk, bool_field(c, "norm_topk_prob", arch == "qwen3moe"));
  if (norm_topk != (arch == "qwen3moe"))
    return make_error(ErrorCode::kUnsupported, "config.json: {} with norm_topk_prob {}", info.hf_arch, norm_topk);
  if (arch == "qwen2moe") {
    TALLY_ASSIGN_OR_RETURN(const int64_t n_ff_shexp, int_field(c, "shared_expert_intermediate_size"));
    w.set_u32(arch + ".expert_shared_feed_forward_length", static_cast<uint32_t>(n_ff_shexp));
    info.shared_expert = true;
  } else {
    TALLY_ASSIGN_OR_RETURN(const int64_t sparse_step, int_field(c, "decoder_sparse_step", 1));
    const json* mlp_only = find(c, "mlp_only_layers");
    if (sparse_step != 1 || (mlp_only && !mlp_only->empty()))
      return make_error(ErrorCode::kUnsupported, "config.json: qwen3moe with dense layers (decoder_sparse_step, "
                                                 "mlp_only_layers)");
  }
  return Status::ok_status();
}

}  // namespace

Result<HfModelInfo> hf_config_to_gguf(const json& c, const std::string& name, io::GgufWriter& w) {
  if (!c.is_object()) return make_error(ErrorCode::kFormat, "config.json: not a JSON object");
  TALLY_ASSIGN_OR_RETURN(const HfArch* a, find_hf_arch(c));
  HfModelInfo info;
  info.hf_arch = std::string(a->hf_arch);
  info.arch = std::string(a->arch);
  const std::string& arch = info.arch;
  TALLY_ASSIGN_OR_RETURN(info.n_vocab, int_field(c, "vocab_size"));
  TALLY_ASSIGN_OR_RETURN(info.n_embd, int_field(c, "hidden_size"));
  TALLY_ASSIGN_OR_RETURN(info.n_layers, int_field(c, "num_hidden_layers"));
  TALLY_ASSIGN_OR_RETURN(info.n_heads, int_field(c, "num_attention_heads"));
  TALLY_ASSIGN_OR_RETURN(info.n_kv_heads, int_field(c, "num_key_value_heads", info.n_heads));
  TALLY_ASSIGN_OR_RETURN(const int64_t n_ff, int_field(c, "intermediate_size"));
  TALLY_ASSIGN_OR_RETURN(const int64_t n_ctx, int_field(c, "max_position_embeddings"));
  const bool explicit_head_dim = find(c, "head_dim") != nullptr;
  TALLY_ASSIGN_OR_RETURN(info.head_dim, int_field(c, "head_dim", info.n_embd / info.n_heads));
  if (info.head_dim <= 0 || (!explicit_head_dim && info.n_embd % info.n_heads != 0))
    return make_error(ErrorCode::kFormat, "config.json: hidden_size {} is not a multiple of num_attention_heads {}",
                      info.n_embd, info.n_heads);
  TALLY_ASSIGN_OR_RETURN(const double rope_theta, float_field(c, "rope_theta", 10000.0));
  TALLY_ASSIGN_OR_RETURN(const double eps, float_field(c, "rms_norm_eps", 1e-6));
  TALLY_ASSIGN_OR_RETURN(const double partial_rotary, float_field(c, "partial_rotary_factor", 1.0));
  const int64_t rope_dim = static_cast<int64_t>(partial_rotary * static_cast<double>(info.head_dim));
  // Gemma ties its embeddings without saying so; others default to untied.
  const bool gemma = arch == "gemma2" || arch == "gemma3";
  TALLY_ASSIGN_OR_RETURN(info.tied, bool_field(c, "tie_word_embeddings", gemma));
  TALLY_ASSIGN_OR_RETURN(info.qkv_bias, bool_field(c, "attention_bias", arch == "qwen2" || arch == "qwen2moe"));
  info.permute_qk = arch == "llama";
  info.norm_plus_one = gemma;
  info.gemma_norms = gemma;
  info.fused = arch == "phi3";
  info.qk_norm = arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3";
  // Mistral-style llama: one window on every layer (null or absent: none).
  if (arch == "llama") {
    if (const json* sw = find(c, "sliding_window"); sw != nullptr && !sw->is_null()) {
      TALLY_ASSIGN_OR_RETURN(const int64_t window, int_field(c, "sliding_window"));
      if (window < n_ctx) w.set_u32(arch + ".attention.sliding_window", static_cast<uint32_t>(window));
    }
  }
  if ((arch == "qwen2" || arch == "qwen2moe") && bool_field(c, "use_sliding_window", false).ok() && *bool_field(c, "use_sliding_window", false))
    return make_error(ErrorCode::kUnsupported, "config.json: {} with use_sliding_window", info.hf_arch);

  w.set_string("general.architecture", arch);
  w.set_string("general.name", name);
  w.set_u32(arch + ".block_count", static_cast<uint32_t>(info.n_layers));
  w.set_u32(arch + ".context_length", static_cast<uint32_t>(n_ctx));
  w.set_u32(arch + ".embedding_length", static_cast<uint32_t>(info.n_embd));
  w.set_u32(arch + ".feed_forward_length", static_cast<uint32_t>(n_ff));
  w.set_u32(arch + ".attention.head_count", static_cast<uint32_t>(info.n_heads));
  w.set_u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(info.n_kv_heads));
  w.set_f32(arch + ".rope.freq_base", static_cast<float>(rope_theta));
  w.set_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(eps));
  if (explicit_head_dim) {
    w.set_u32(arch + ".attention.key_length", static_cast<uint32_t>(info.head_dim));
    w.set_u32(arch + ".attention.value_length", static_cast<uint32_t>(info.head_dim));
  }
  w.set_u32(arch + ".rope.dimension_count", static_cast<uint32_t>(rope_dim));
  if (arch == "llama") w.set_u32(arch + ".vocab_size", static_cast<uint32_t>(info.n_vocab));
  if (arch == "phi3") {
    TALLY_ASSIGN_OR_RETURN(const int64_t orig, int_field(c, "original_max_position_embeddings", n_ctx));
    w.set_u32(arch + ".rope.scaling.original_context_length", static_cast<uint32_t>(orig));
  }
  TALLY_RETURN_IF_ERROR(read_rope_scaling(c, arch, rope_theta, rope_dim, w, info));
  if (gemma) TALLY_RETURN_IF_ERROR(read_gemma(c, arch, w, info));
  TALLY_RETURN_IF_ERROR(read_moe(c, arch, w, info));
  return info;
}

}  // namespace tally
