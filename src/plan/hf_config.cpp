#include "plan/hf_config.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace tally::plan {

namespace {

using nlohmann::json;

// A positive integer field; `fallback` < 0 means required.
Result<int64_t> int_field(const json& j, const std::string& name, const char* key,
                          int64_t fallback = -1) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (fallback >= 0) return fallback;
    return make_error(ErrorCode::kFormat, "{}: missing field '{}'", name, key);
  }
  if (!it->is_number_integer())
    return make_error(ErrorCode::kFormat, "{}: field '{}' is {} (expected an integer)", name, key,
                      it->dump());
  const int64_t v = it->get<int64_t>();
  if (v <= 0)
    return make_error(ErrorCode::kFormat, "{}: field '{}' is {} (must be positive)", name, key, v);
  return v;
}

Result<bool> bool_field(const json& j, const std::string& name, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    return make_error(ErrorCode::kFormat, "{}: field '{}' is {} (expected true or false)", name,
                      key, it->dump());
  return it->get<bool>();
}

Result<std::optional<DType>> dtype_field(const json& j, const std::string& name) {
  auto it = j.find("torch_dtype");
  if (it == j.end() || it->is_null()) return std::optional<DType>();
  if (!it->is_string())
    return make_error(ErrorCode::kFormat, "{}: field 'torch_dtype' is {} (expected a string)",
                      name, it->dump());
  const std::string s = it->get<std::string>();
  if (s == "float32") return std::optional<DType>(DType::kF32);
  if (s == "float16") return std::optional<DType>(DType::kF16);
  if (s == "bfloat16") return std::optional<DType>(DType::kBF16);
  return make_error(ErrorCode::kUnsupported,
                    "{}: field 'torch_dtype' is '{}' (expected float32, float16 or bfloat16)",
                    name, s);
}

std::string string_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Result<PlanModel> plan_model_from_hf_config_text(std::string_view text, const std::string& name) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return make_error(ErrorCode::kFormat, "{}: not valid JSON at byte {}", name, e.byte);
  }
  if (!j.is_object())
    return make_error(ErrorCode::kFormat, "{}: expected a JSON object at the top level", name);

  PlanModel m;
  m.name = name;
  m.source = "hf-config";
  m.architecture = string_field(j, "model_type");
  if (m.architecture.empty()) m.architecture = "llama";
  TALLY_ASSIGN_OR_RETURN(m.n_embd, int_field(j, name, "hidden_size"));
  TALLY_ASSIGN_OR_RETURN(m.n_layers, int_field(j, name, "num_hidden_layers"));
  TALLY_ASSIGN_OR_RETURN(m.n_heads, int_field(j, name, "num_attention_heads"));
  TALLY_ASSIGN_OR_RETURN(m.n_kv_heads, int_field(j, name, "num_key_value_heads", m.n_heads));
  TALLY_ASSIGN_OR_RETURN(m.n_ff, int_field(j, name, "intermediate_size"));
  TALLY_ASSIGN_OR_RETURN(m.n_vocab, int_field(j, name, "vocab_size"));
  TALLY_ASSIGN_OR_RETURN(m.context_length, int_field(j, name, "max_position_embeddings"));
  if (!j.contains("head_dim") && m.n_embd % m.n_heads != 0)
    return make_error(ErrorCode::kFormat,
                      "{}: hidden_size {} is not a multiple of num_attention_heads {} and "
                      "there is no 'head_dim'",
                      name, m.n_embd, m.n_heads);
  TALLY_ASSIGN_OR_RETURN(m.head_dim, int_field(j, name, "head_dim", m.n_embd / m.n_heads));
  TALLY_ASSIGN_OR_RETURN(m.tied_embeddings, bool_field(j, name, "tie_word_embeddings", false));
  // Qwen2 always has q/k/v biases; llama-style configs say so with attention_bias.
  TALLY_ASSIGN_OR_RETURN(m.qkv_bias,
                         bool_field(j, name, "attention_bias", m.architecture == "qwen2"));
  // Qwen3's and Gemma 3's q_norm / k_norm, Gemma 2/3's post norms: always present.
  m.qk_norm = m.architecture == "qwen3" || m.architecture == "gemma3_text" || m.architecture == "gemma3";
  m.post_norms = m.architecture == "gemma2" || m.architecture == "gemma3_text" || m.architecture == "gemma3";
  m.fused_projections = m.architecture == "phi3";  // qkv_proj, gate_up_proj
  TALLY_ASSIGN_OR_RETURN(m.native_type, dtype_field(j, name));
  if (m.n_heads % m.n_kv_heads != 0)
    return make_error(ErrorCode::kFormat,
                      "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                      name, m.n_heads, m.n_kv_heads);
  return plan_model_finish(std::move(m));
}

Result<PlanModel> plan_model_from_hf_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "{}: cannot open file", path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error(ErrorCode::kIo, "{}: read failed", path);
  return plan_model_from_hf_config_text(text.str(), path);
}

}  // namespace tally::plan
