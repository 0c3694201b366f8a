#include "plan/weight_format.h"

#include "base/ascii.h"
#include "base/check.h"
#include "plan/llama_quant_rules.h"

namespace tally::plan {

Result<WeightFormat> weight_format_from_name(std::string_view name) {
  const std::string n = ascii_lower(name);
  WeightFormat f;
  f.name = n;
  if (n == "file") {
    f.from_file = true;
    return f;
  }
  struct Mix {
    const char* name;
    DType base;
  };
  static constexpr Mix kMixes[] = {
      {"q3_k_m", DType::kQ3_K}, {"q4_k_m", DType::kQ4_K}, {"q5_k_m", DType::kQ5_K}};
  for (const auto& mix : kMixes) {
    if (n == mix.name) {
      f.base = mix.base;
      f.more_bits = DType::kQ6_K;
      return f;
    }
  }
  auto t = dtype_from_name(n);
  if (!t)
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown weight type '{}' (try f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, "
                      "q4_k_m, q5_k_m or file)",
                      name);
  const auto& info = dtype_info(*t);
  if (*t == DType::kI8 || *t == DType::kI16 || *t == DType::kI32 || *t == DType::kI64 ||
      *t == DType::kF64)
    return make_error(ErrorCode::kInvalidArgument, "weight type '{}' is not a weight format",
                      info.name);
  f.base = *t;
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
  f.name = std::string(dtype_name(f.base));
  return f;
}

DType weight_format_tensor_type(const WeightFormat& format, const PlanTensor& t,
                                const PlanModel& model) {
  TALLY_CHECK(!format.from_file, "tensor type asked of a from-file format for {}", t.name);
  if (t.is_vector()) return DType::kF32;
  DType type = format.base;
  // MoE routers are kept f32 when quantizing (llama.cpp's and `tally quantize`'s rule).
  if (plan_tensor_is_router(t) && dtype_info(type).block_size > 1) return DType::kF32;
  if (format.more_bits) {
    const bool output_like =
        t.role == TensorRole::kOutput ||
        (t.role == TensorRole::kTokenEmbd && model.tied_embeddings);
    if (output_like || llama_quant_more_bits_tensor(t, model)) type = *format.more_bits;
  }
  // A type llama.cpp would refuse for these rows is planned as f16 (a plan has no error).
  return llama_quant_block_fallback(type, t.n_cols).value_or(DType::kF16);
}

int64_t weight_format_tensor_bytes(const WeightFormat& format, const PlanTensor& t,
                                   const PlanModel& model) {
  if (format.from_file) return t.file_bytes;
  const DType type = weight_format_tensor_type(format, t, model);
  return t.n_rows * dtype_row_bytes(type, t.n_cols);
}

}  // namespace tally::plan
