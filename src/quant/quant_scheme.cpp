#include "quant/quant_scheme.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/ascii.h"
#include "plan/llama_quant_rules.h"

namespace tally::quant {

namespace {

struct SchemeRow {
  const char* name;
  DType base;
  bool k_mix;
  uint32_t file_type;  // llama.h's llama_ftype: ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q4_0 2,
                       // MOSTLY_Q4_1 3, MOSTLY_Q8_0 7, MOSTLY_Q5_0 8, MOSTLY_Q5_1 9,
                       // MOSTLY_Q2_K 10, MOSTLY_Q3_K_S 11, MOSTLY_Q4_K_M 15,
                       // MOSTLY_Q5_K_M 17, MOSTLY_IQ4_NL 25, MOSTLY_IQ4_XS 30,
                       // MOSTLY_BF16 32
};

constexpr SchemeRow kSchemes[] = {
    {"f32", DType::kF32, false, 0},      {"f16", DType::kF16, false, 1},
    {"bf16", DType::kBF16, false, 32},   {"q8_0", DType::kQ8_0, false, 7},
    {"q4_0", DType::kQ4_0, false, 2},    {"q4_1", DType::kQ4_1, false, 3},
    {"q5_0", DType::kQ5_0, false, 8},    {"q5_1", DType::kQ5_1, false, 9},
    {"q2_k", DType::kQ2_K, false, 10},   {"q3_k", DType::kQ3_K, false, 11},
    {"q4_k_m", DType::kQ4_K, true, 15},  {"q5_k_m", DType::kQ5_K, true, 17},
    {"iq4_nl", DType::kIQ4_NL, false, 25}, {"iq4_xs", DType::kIQ4_XS, false, 30},
};

bool fits_blocks(DType type, int64_t n_cols) { return n_cols % dtype_info(type).block_size == 0; }

}  // namespace

Result<QuantScheme> quant_scheme_from_name(std::string_view name) {
  std::string n = ascii_lower(name);
  if (n == "q4_k" || n == "q5_k") n += "_m";
  for (const SchemeRow& row : kSchemes) {
    if (n == row.name) return QuantScheme{row.name, row.base, row.k_mix, row.file_type};
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown weight type '{}' (types: {}; q4_k = q4_k_m, q5_k = q5_k_m)", name,
                    fmt::join(quant_scheme_names(), ", "));
}

std::vector<std::string> quant_scheme_names() {
  std::vector<std::string> names;
  for (const SchemeRow& row : kSchemes) names.emplace_back(row.name);
  return names;
}

bool quant_scheme_is_quantized(const QuantScheme& scheme) {
  return scheme.base != DType::kF32 && scheme.base != DType::kF16 && scheme.base != DType::kBF16;
}

Result<DType> quant_scheme_tensor_type(const QuantScheme& scheme, const plan::PlanTensor& t,
                                       const plan::PlanModel& model) {
  using plan::TensorRole;
  if (t.is_vector()) return DType::kF32;
  if (!quant_scheme_is_quantized(scheme)) return scheme.base;
  // MoE routers stay f32, as llama.cpp's quantizer keeps them (a rounded router flips choices).
  if (plan::plan_tensor_is_router(t)) return DType::kF32;

  DType type = scheme.base;
  const bool output_like = t.role == TensorRole::kOutput ||
                           (t.role == TensorRole::kTokenEmbd && model.tied_embeddings);
  if (output_like) {
    if (!fits_blocks(type, t.n_cols)) {
      type = DType::kQ8_0;
    } else if (type != DType::kQ8_0) {
      type = DType::kQ6_K;
    }
  } else if (scheme.k_mix && plan::llama_quant_more_bits_tensor(t, model)) {
    type = DType::kQ6_K;
  }
  const std::optional<DType> stored = plan::llama_quant_block_fallback(type, t.n_cols);
  if (!stored) {
    return make_error(ErrorCode::kUnsupported,
                      "tensor '{}': rows of {} values are not whole {} blocks of {} (llama.cpp refuses such a "
                      "tensor too)",
                      t.name, t.n_cols, dtype_name(type), dtype_info(type).block_size);
  }
  // Should llama.cpp's fallback be a type tally cannot compute: q8_0 instead, then f16 if the
  // rows are not whole q8_0 blocks either. (Every fallback is computable today.)
  if (dtype_info(*stored).computable) return *stored;
  return fits_blocks(DType::kQ8_0, t.n_cols) ? DType::kQ8_0 : DType::kF16;
}

}  // namespace tally::quant
