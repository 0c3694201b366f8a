#include "plan/llama_quant_rules.h"

namespace tally::plan {

namespace {

bool fits_blocks(DType type, int64_t n_cols) { return n_cols % dtype_info(type).block_size == 0; }

}  // namespace

bool llama_quant_more_bits_layer(int64_t layer, int64_t n_layers) {
  if (layer < 0) return false;
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

bool llama_quant_more_bits_tensor(const PlanTensor& t, const PlanModel& model) {
  return (t.role == TensorRole::kAttnV || t.role == TensorRole::kFfnDown) &&
         llama_quant_more_bits_layer(t.layer, model.n_layers);
}

std::optional<DType> llama_quant_block_fallback(DType type, int64_t n_cols) {
  if (fits_blocks(type, n_cols)) return type;
  DType fallback;
  switch (type) {
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kIQ4_XS: fallback = DType::kIQ4_NL; break;
    case DType::kQ4_K: fallback = DType::kQ5_0; break;
    case DType::kQ5_K: fallback = DType::kQ5_1; break;
    case DType::kQ6_K: fallback = DType::kQ8_0; break;
    default: return std::nullopt;
  }
  return fits_blocks(fallback, n_cols) ? fallback : DType::kF16;
}

}  // namespace tally::plan
