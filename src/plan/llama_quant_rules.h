// The per-tensor rules of llama.cpp's llama-quantize (llama_tensor_get_type in
// src/llama-quant.cpp) that both the planner (weight_format.h) and the quantizing writer
// (quant/quant_scheme.h) follow, kept here once so that they cannot disagree.
#pragma once

#include <cstdint>
#include <optional>

#include "plan/plan_model.h"
#include "tensor/dtype.h"

namespace tally::plan {

// llama.cpp's use_more_bits(i_layer, n_layers): the first and last eighth of the layers and
// every third layer between (it counts attn_v tensors in layer order, so its index is the
// layer).
bool llama_quant_more_bits_layer(int64_t layer, int64_t n_layers);

// Whether a *_k_m mix stores `tensor` with more bits because of its layer: attn_v and
// ffn_down of the layers above (the output matrix has a rule of its own).
bool llama_quant_more_bits_tensor(const PlanTensor& tensor, const PlanModel& model);

// The type llama.cpp stores a matrix in when its rows of n_cols values are not whole blocks
// of `type`: `type` itself when they are; else q2_K / q3_K / iq4_xs -> iq4_nl, q4_K -> q5_0,
// q5_K -> q5_1, q6_K -> q8_0, then f16 if the rows are not whole blocks of that either;
// nullopt for any other type (llama.cpp refuses the tensor).
std::optional<DType> llama_quant_block_fallback(DType type, int64_t n_cols);

}  // namespace tally::plan
