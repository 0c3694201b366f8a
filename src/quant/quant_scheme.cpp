#include "quant/quant_scheme.h"

#include "base/ascii.h"

namespace tally::quant {

Result<QuantScheme> quant_scheme_from_name(std::string_view name) {
  const std::optional<plan::LlamaFileType> ft = plan::llama_file_type_from_name(name);
  if (!ft) {
    return make_error(ErrorCode::kInvalidArgument, "unknown weight type '{}' (types: {})", name,
                      plan::llama_file_type_names());
  }
  QuantScheme s;
  s.name = ascii_lower(ft->name);
  s.llama = *ft;
  s.base = ft->base;
  s.file_type = ft->ftype;
  return s;
}

std::vector<std::string> quant_scheme_names() {
  std::vector<std::string> names;
  for (const plan::LlamaFileType& ft : plan::llama_file_types()) names.push_back(ascii_lower(ft.name));
  return names;
}

bool quant_scheme_is_quantized(const QuantScheme& scheme) { return plan::llama_file_type_is_quantized(scheme.llama); }

Result<DType> quant_scheme_tensor_type(const QuantScheme& scheme, const plan::PlanTensor& t,
                                       const plan::PlanModel& model) {
  const plan::LlamaTensorType chosen = plan::llama_quant_tensor_type(scheme.llama, t, model, scheme.overrides);
  if (chosen.refused) {
    return make_error(ErrorCode::kUnsupported,
                      "tensor '{}': rows of {} values are not whole {} blocks of {} (llama.cpp refuses such a "
                      "tensor too)",
                      t.name, t.n_cols, dtype_name(chosen.wanted), dtype_info(chosen.wanted).block_size);
  }
  return chosen.type;
}

}  // namespace tally::quant
