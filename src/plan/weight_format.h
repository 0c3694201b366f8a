// How weights are stored, for planning: one ggml type for every matrix ("f16", "q8_0",
// "q4_K"), a llama.cpp-style mix ("q4_k_m": q4_K with some tensors in q6_K), or "file": the
// real type and size of each tensor of a GGUF file.
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
#include "plan/plan_model.h"
#include "tensor/dtype.h"

namespace tally::plan {

struct WeightFormat {
  std::string name;                // as given: "f16", "q4_k_m", "file"
  bool from_file = false;          // each tensor's own type and bytes (GGUF sources only)
  DType base = DType::kF16;        // the type of matrices
  std::optional<DType> more_bits;  // *_k_m: the type of the tensors that get more bits
};

// Accepts any ggml type name (case-insensitive: f32, f16, bf16, q8_0, q4_0, q4_k, q6_k, ...),
// "q4_k_m", "q5_k_m", "q3_k_m" and "file".
Result<WeightFormat> weight_format_from_name(std::string_view name);
// The format of a model's own weights: "file" for a GGUF, else its native type (f16 if none).
WeightFormat weight_format_native(const PlanModel& model);

// The type a tensor is stored in under `format` (not for from_file formats).
// The *_k_m mix approximates llama.cpp's choice: output (or the tied embedding) and, in the
// first and last eighth of the blocks and every third block between, attn_v and ffn_down get
// `more_bits`; every other matrix gets `base`. For a real file, plan the file itself.
DType weight_format_tensor_type(const WeightFormat& format, const PlanTensor& tensor,
                                const PlanModel& model);

// Bytes of the whole tensor under `format` (file bytes for from_file formats).
int64_t weight_format_tensor_bytes(const WeightFormat& format, const PlanTensor& tensor,
                                   const PlanModel& model);

}  // namespace tally::plan
