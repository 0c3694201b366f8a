#include "plan/llama_quant_rules.h"

#include <fmt/format.h>

#include "base/ascii.h"

namespace tally::plan {

namespace {

constexpr LlamaFileType kFileTypes[] = {
    {"F32", 0, DType::kF32},       {"F16", 1, DType::kF16},        {"BF16", 32, DType::kBF16},
    {"Q8_0", 7, DType::kQ8_0},     {"Q4_0", 2, DType::kQ4_0},      {"Q4_1", 3, DType::kQ4_1},
    {"Q5_0", 8, DType::kQ5_0},     {"Q5_1", 9, DType::kQ5_1},      {"Q2_K", 10, DType::kQ2_K},
    {"Q3_K_S", 11, DType::kQ3_K},  {"Q3_K_M", 12, DType::kQ3_K},   {"Q3_K_L", 13, DType::kQ3_K},
    {"Q4_K_S", 14, DType::kQ4_K},  {"Q4_K_M", 15, DType::kQ4_K},   {"Q5_K_S", 16, DType::kQ5_K},
    {"Q5_K_M", 17, DType::kQ5_K},  {"Q6_K", 18, DType::kQ6_K},     {"IQ4_NL", 25, DType::kIQ4_NL},
    {"IQ4_XS", 30, DType::kIQ4_XS},
};

// llama.h's numbers of the file types whose rules differ.
enum : uint32_t {
  kFtQ4_0 = 2, kFtQ5_0 = 8, kFtQ2_K = 10, kFtQ3_K_S = 11, kFtQ3_K_M = 12, kFtQ3_K_L = 13, kFtQ4_K_S = 14,
  kFtQ4_K_M = 15, kFtQ5_K_M = 17, kFtIQ4_NL = 25, kFtIQ4_XS = 30,
};

bool quant_rows_fit(DType type, int64_t n_cols) { return n_cols % dtype_info(type).block_size == 0; }

bool name_has(std::string_view name, std::string_view part) { return name.find(part) != std::string_view::npos; }

// llama.cpp sorts a tensor into its rule by name, not by shape: these are its substrings.
// attn_v, a fused attn_qkv and attn_kv_b all take attn_v's rules (its "attn_v-like" tensors).
enum class MixCategory { kAttnVLike, kAttnK, kAttnOut, kFfnDown, kOther };

MixCategory mix_category(std::string_view name) {
  if (name_has(name, "attn_qkv.weight") || name_has(name, "attn_kv_b.weight") || name_has(name, "attn_v.weight"))
    return MixCategory::kAttnVLike;
  if (name_has(name, "attn_k.weight")) return MixCategory::kAttnK;
  if (name_has(name, "attn_output.weight")) return MixCategory::kAttnOut;
  if (name_has(name, "ffn_down")) return MixCategory::kFfnDown;  // also ffn_down_exps / _shexp
  return MixCategory::kOther;
}

// attn_v-like: more bits where it is small next to attn_q (GQA) and in the mixes' chosen layers.
DType attn_v_type(uint32_t ft, DType type, const PlanTensor& t, const PlanModel& m) {
  const int64_t n_gqa = m.n_kv_heads > 0 ? m.n_heads / m.n_kv_heads : 1;
  if (ft == kFtQ2_K) type = n_gqa >= 4 ? DType::kQ4_K : DType::kQ3_K;
  else if (ft == kFtQ3_K_M) type = t.layer < 2 ? DType::kQ5_K : DType::kQ4_K;
  else if (ft == kFtQ3_K_L) type = DType::kQ5_K;
  else if ((ft == kFtIQ4_NL || ft == kFtIQ4_XS) && n_gqa >= 4) type = DType::kQ5_K;
  else if ((ft == kFtQ4_K_M || ft == kFtQ5_K_M) && llama_quant_more_bits_layer(t.layer, m.n_layers))
    type = DType::kQ6_K;
  else if (ft == kFtQ4_K_S && t.layer < 4) type = DType::kQ5_K;
  // llama.cpp's 70B rule (its 80-layer llama is the 70B): attn_v is 8x smaller than attn_q.
  if (m.architecture == "llama" && m.n_layers == 80 && (type == DType::kQ3_K || type == DType::kQ4_K))
    type = DType::kQ5_K;
  if (m.n_expert == 8) type = DType::kQ8_0;  // 8 experts: attn_v is a tiny part of the model
  return type;
}

// has_imatrix: llama.cpp mixes differently when an importance matrix is given.
DType ffn_down_type(uint32_t ft, DType type, const PlanTensor& t, const PlanModel& m, bool has_imatrix) {
  const int64_t i = t.layer, n = m.n_layers;
  if (ft == kFtQ2_K) return DType::kQ3_K;
  if (ft == kFtQ3_K_M) return i < n / 16 ? DType::kQ5_K : DType::kQ4_K;
  if (ft == kFtQ3_K_L) return DType::kQ5_K;
  if (ft == kFtQ4_K_M) return llama_quant_more_bits_layer(i, n) ? DType::kQ6_K : type;
  // Without an imatrix the first eighth of an IQ4 file's ffn_down gets q5_K; with one, not.
  if ((ft == kFtIQ4_NL || ft == kFtIQ4_XS) && i < n / 8 && !has_imatrix) return DType::kQ5_K;
  if (ft == kFtQ5_K_M && llama_quant_more_bits_layer(i, n)) return DType::kQ6_K;
  if (ft == kFtQ4_K_S && i < n / 8) return DType::kQ5_K;
  // With an imatrix, Q4_0 / Q5_0's first eighth of ffn_down goes to q4_1 / q5_1 (llama.cpp
  // guards against "craziness" there; without one q4_1 / q5_1 do worse, so only then).
  if ((ft == kFtQ4_0 || ft == kFtQ5_0) && has_imatrix && i < n / 8)
    return ft == kFtQ4_0 ? DType::kQ4_1 : DType::kQ5_1;
  return type;
}

DType attn_output_type(uint32_t ft, DType type, const PlanModel& m) {
  if (m.n_expert == 8) {  // 8 experts: attn_output q5_K in the mixes below 5 bits
    for (uint32_t f : {kFtQ2_K, kFtQ3_K_S, kFtQ3_K_M, kFtIQ4_NL, kFtQ4_K_S, kFtQ4_K_M, kFtIQ4_XS})
      if (ft == f) return DType::kQ5_K;
    return type;
  }
  if (ft == kFtQ2_K) return DType::kQ3_K;
  if (ft == kFtQ3_K_M) return DType::kQ4_K;
  if (ft == kFtQ3_K_L) return DType::kQ5_K;
  return type;
}

// The mix: llama_tensor_get_type for the file types tally writes (no i-quant below 4 bits,
// no falcon rules).
DType llama_mix_type(const LlamaFileType& ft, const PlanTensor& t, const PlanModel& m,
                     const LlamaQuantOverrides& o) {
  const DType base = ft.base;
  const bool output_like = t.role == TensorRole::kOutput || (t.role == TensorRole::kTokenEmbd && m.tied_embeddings);
  if (output_like) {
    if (o.output_type) return *o.output_type;
    if (!quant_rows_fit(base, t.n_cols)) return DType::kQ8_0;
    return base == DType::kQ8_0 ? base : DType::kQ6_K;
  }
  switch (mix_category(t.name)) {
    case MixCategory::kAttnVLike: return attn_v_type(ft.ftype, base, t, m);
    case MixCategory::kAttnK: return m.n_expert == 8 ? DType::kQ8_0 : base;
    case MixCategory::kFfnDown: return ffn_down_type(ft.ftype, base, t, m, o.has_imatrix);
    case MixCategory::kAttnOut: return attn_output_type(ft.ftype, base, m);
    case MixCategory::kOther: break;
  }
  return base;
}

}  // namespace

std::span<const LlamaFileType> llama_file_types() { return kFileTypes; }

std::optional<LlamaFileType> llama_file_type_from_name(std::string_view name) {
  std::string n = ascii_lower(name);
  if (n == "q3_k" || n == "q4_k" || n == "q5_k") n += "_m";
  for (const LlamaFileType& t : kFileTypes)
    if (ascii_iequals(n, t.name)) return t;
  return std::nullopt;
}

std::string llama_file_type_names() {
  std::string out;
  for (const LlamaFileType& t : kFileTypes) out += fmt::format("{}{}", out.empty() ? "" : ", ", t.name);
  return out + " (Q3_K = Q3_K_M, Q4_K = Q4_K_M, Q5_K = Q5_K_M)";
}

bool llama_file_type_is_quantized(const LlamaFileType& type) {
  return type.base != DType::kF32 && type.base != DType::kF16 && type.base != DType::kBF16;
}

LlamaTensorType llama_quant_tensor_type(const LlamaFileType& ft, const PlanTensor& t, const PlanModel& m,
                                        const LlamaQuantOverrides& o) {
  LlamaTensorType r;
  if (t.is_vector()) {
    r.type = r.wanted = DType::kF32;
    return r;
  }
  DType type = ft.base;
  if (!o.pure && llama_file_type_is_quantized(ft)) type = llama_mix_type(ft, t, m, o);
  // llama-quantize applies the two overrides by name after the mix (--pure too).
  if (o.token_embd_type && t.role == TensorRole::kTokenEmbd) type = *o.token_embd_type;
  if (o.output_type && t.role == TensorRole::kOutput) type = *o.output_type;
  // MoE routers are never quantized, as in llama.cpp's quantizer (a rounded router flips
  // expert choices).
  if (plan_tensor_is_router(t) && dtype_info(type).block_size > 1) type = DType::kF32;
  r.wanted = type;
  const std::optional<DType> stored = llama_quant_block_fallback(type, t.n_cols);
  r.refused = !stored.has_value();
  r.type = stored.value_or(DType::kF16);
  return r;
}

bool llama_quant_more_bits_layer(int64_t layer, int64_t n_layers) {
  if (layer < 0) return false;
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

std::optional<DType> llama_quant_block_fallback(DType type, int64_t n_cols) {
  if (quant_rows_fit(type, n_cols)) return type;
  DType fallback;
  switch (type) {
    case DType::kIQ4_XS: fallback = DType::kIQ4_NL; break;
    case DType::kQ2_K:
    case DType::kQ3_K: fallback = DType::kQ4_0; break;
    case DType::kQ4_K: fallback = DType::kQ5_0; break;
    case DType::kQ5_K: fallback = DType::kQ5_1; break;
    case DType::kQ6_K: fallback = DType::kQ8_0; break;
    default:
      // A 32-block type has no smaller block to go to: f16, as a 256-block type whose
      // fallback does not fit either.
      if (dtype_info(type).block_size > 32) return std::nullopt;
      return DType::kF16;
  }
  return quant_rows_fit(fallback, n_cols) ? fallback : DType::kF16;
}

}  // namespace tally::plan
