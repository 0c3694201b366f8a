// How weights are stored, for planning: one of llama.cpp's file types ("f16", "q4_0",
// "q4_k_m", "q3_k_s": the type llama-quantize, and so `tally quantize`, gives each tensor;
// llama_quant_rules.h), or "file": the real type and size of each tensor of a GGUF file.
//
// Bytes per weight follow the block layouts (tensor/dtype.h): q8_0 = 34/32, q4_0 = 18/32,
// q4_K = 144/256, q5_K = 176/256, q6_K = 210/256. Vectors (norms, biases) are kept in f32, as
// GGUF files keep them. A matrix whose rows do not fill whole blocks of the chosen type is
// counted in the type llama.cpp falls back to (llama_quant_rules.h: q4_K -> q5_0, q6_K ->
// q8_0, ...), or in f16 where llama.cpp would refuse the tensor.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "plan/llama_quant_rules.h"
#include "plan/plan_model.h"
#include "tensor/dtype.h"

namespace tally::plan {

struct WeightFormat {
  std::string name;                // as given: "f16", "q4_k_m", "file"
  bool from_file = false;          // each tensor's own type and bytes (GGUF sources only)
  DType base = DType::kF16;        // the type of most matrices
  LlamaFileType file_type;         // its per-tensor rules (unless from_file)
};

// Accepts llama.cpp's file type names (case-insensitive: f32, f16, bf16, q8_0, q4_0, q2_k,
// q3_k_s/m/l, q4_k_s/m, q5_k_s/m, q6_k, iq4_nl, iq4_xs; q3_k/q4_k/q5_k = *_m as in
// llama-quantize) and "file".
Result<WeightFormat> weight_format_from_name(std::string_view name);
// The format of a model's own weights: "file" for a GGUF, else its native type (f16 if none).
WeightFormat weight_format_native(const PlanModel& model);

// The type a tensor is stored in under `format` (not for from_file formats): for a file type
// what `tally quantize` writes (llama_quant_tensor_type); a type llama.cpp would refuse for
// the tensor's rows is planned as f16.
DType weight_format_tensor_type(const WeightFormat& format, const PlanTensor& tensor,
                                const PlanModel& model);

// Bytes of the whole tensor under `format` (file bytes for from_file formats).
int64_t weight_format_tensor_bytes(const WeightFormat& format, const PlanTensor& tensor,
                                   const PlanModel& model);

}  // namespace tally::plan
