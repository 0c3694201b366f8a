// How a model's tensors are stored when tally writes a model (`tally quantize`, `tally convert
// --synthetic`): one of llama.cpp's file types by name, with llama-quantize's per-tensor
// rules (plan/llama_quant_rules.h, the one copy the planner shares; docs/quantization.md
// lists them): vectors f32, matrices the file type's base type except where the mix gives
// more bits (the output, some attn_v / ffn_down / attn_output), rows that are not whole
// blocks in llama.cpp's fallback type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "plan/llama_quant_rules.h"
#include "plan/plan_model.h"
#include "tensor/dtype.h"

namespace tally::quant {

struct QuantScheme {
  std::string name;                      // lower case: "f16", "q4_0", "q4_k_m", ...
  plan::LlamaFileType llama;             // its rules
  plan::LlamaQuantOverrides overrides;   // --pure, --output-tensor-type, --token-embedding-type
  DType base = DType::kF16;              // the type of ordinary matrices
  uint32_t file_type = 1;                // general.file_type, llama.cpp's llama_ftype number
};

// llama.cpp's file types (plan::llama_file_types), case-insensitive; "q3_k", "q4_k" and
// "q5_k" are aliases of the *_m types (as in llama-quantize). An unknown name lists them.
Result<QuantScheme> quant_scheme_from_name(std::string_view name);
std::vector<std::string> quant_scheme_names();  // lower case

bool quant_scheme_is_quantized(const QuantScheme& scheme);

// The type of `tensor` (a tensor of `model.tensors`) under `scheme`; an error when its rows
// cannot be stored in the type the rules chose and llama.cpp has no fallback for it (the
// 32-blocks: rows not a multiple of 32).
Result<DType> quant_scheme_tensor_type(const QuantScheme& scheme, const plan::PlanTensor& tensor,
                                       const plan::PlanModel& model);

}  // namespace tally::quant
