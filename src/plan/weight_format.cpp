#include "plan/weight_format.h"

#include <fmt/format.h>

#include "base/ascii.h"
#include "base/check.h"

namespace tally::plan {

namespace {

// The file type whose matrices are all `type` (f32 / f16 / bf16 models as converted).
std::optional<LlamaFileType> float_file_type(DType type) {
  for (const LlamaFileType& ft : llama_file_types())
    if (ft.base == type && !llama_file_type_is_quantized(ft)) return ft;
  return std::nullopt;
}

}  // namespace

Result<WeightFormat> weight_format_from_name(std::string_view name) {
  WeightFormat f;
  f.name = ascii_lower(name);
  if (f.name == "file") {
    f.from_file = true;
    return f;
  }
  const std::optional<LlamaFileType> ft = llama_file_type_from_name(name);
  if (!ft)
    return make_error(ErrorCode::kInvalidArgument, "unknown weight type '{}' (types: {}, or file)", name,
                      llama_file_type_names());
  f.file_type = *ft;
  f.base = ft->base;
  return f;
}

WeightFormat weight_format_native(const PlanModel& model) {
  WeightFormat f;
  if (model.has_file_bytes()) {
    f.name = "file";
    f.from_file = true;
    return f;
  }
  f.base = model.native_type.value_or(DType::kF16);
  f.file_type = float_file_type(f.base).value_or(*llama_file_type_from_name("f16"));
  f.name = std::string(dtype_name(f.base));
  return f;
}

DType weight_format_tensor_type(const WeightFormat& format, const PlanTensor& t,
                                const PlanModel& model) {
  TALLY_CHECK(!format.from_file, "tensor type asked of a from-file format for {}", t.name);
  // A type llama.cpp would refuse for these rows is planned as f16 (a plan has no error):
  // llama_quant_tensor_type gives f16 then.
  return llama_quant_tensor_type(format.file_type, t, model).type;
}

int64_t weight_format_tensor_bytes(const WeightFormat& format, const PlanTensor& t,
                                   const PlanModel& model) {
  if (format.from_file) return t.file_bytes;
  const DType type = weight_format_tensor_type(format, t, model);
  return t.n_rows * dtype_row_bytes(type, t.n_cols);
}

}  // namespace tally::plan
