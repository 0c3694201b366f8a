// The per-tensor rules of llama.cpp's llama-quantize (llama_tensor_get_type in
// src/llama-quant.cpp), kept here once: the planner (weight_format.h), the synthetic writer
// and `tally quantize` (quant/quant_scheme.h) all ask this file which type a tensor gets, so
// they cannot disagree. docs/quantization.md lists the rules.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "plan/plan_model.h"
#include "tensor/dtype.h"

namespace tally::plan {

// One of llama.cpp's file types (llama_ftype), by llama-quantize's name.
struct LlamaFileType {
  std::string_view name;  // "Q4_K_M", "F16", ...
  uint32_t ftype = 1;     // general.file_type: llama.h's LLAMA_FTYPE_* number
  DType base = DType::kF16;  // the type of ordinary matrices
};

// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K_S, Q3_K_M, Q3_K_L, Q4_K_S, Q4_K_M,
// Q5_K_S, Q5_K_M, Q6_K, IQ4_NL, IQ4_XS.
std::span<const LlamaFileType> llama_file_types();
// Case-insensitive; Q3_K, Q4_K and Q5_K are aliases of the *_M types, as in llama-quantize.
std::optional<LlamaFileType> llama_file_type_from_name(std::string_view name);
// "F32, F16, ... (Q3_K = Q3_K_M, Q4_K = Q4_K_M, Q5_K = Q5_K_M)", for error messages.
std::string llama_file_type_names();

bool llama_file_type_is_quantized(const LlamaFileType& type);

// llama-quantize's --pure, --output-tensor-type, --token-embedding-type and whether it has
// an --imatrix (which changes the mix: q4_1 / q5_1 early ffn_down in Q4_0 / Q5_0 files, no
// q5_K early ffn_down in IQ4_NL / IQ4_XS files).
struct LlamaQuantOverrides {
  bool pure = false;                     // every matrix in the base type (no mix)
  std::optional<DType> output_type;      // output.weight (or the tied token_embd.weight)
  std::optional<DType> token_embd_type;  // token_embd.weight
  bool has_imatrix = false;
};

// What the rules give one matrix.
struct LlamaTensorType {
  DType type = DType::kF16;    // what is stored
  DType wanted = DType::kF16;  // the mix's choice before the block fallback
  bool refused = false;        // rows are not whole blocks of `wanted` and it has no fallback
                               // (llama.cpp stops there; none of the types above); `type` is
                               // then f16
  bool fell_back() const { return !refused && type != wanted; }
};

// The type llama-quantize stores the matrix `tensor` of `model` in under `file_type`.
// Vectors (norms, biases) are not quantized: f32 whatever the file type.
LlamaTensorType llama_quant_tensor_type(const LlamaFileType& file_type, const PlanTensor& tensor,
                                        const PlanModel& model, const LlamaQuantOverrides& overrides = {});

// llama.cpp's use_more_bits(i_layer, n_layers): the first and last eighth of the layers and
// every third layer between (it counts attn_v tensors in layer order, so its index is the
// layer).
bool llama_quant_more_bits_layer(int64_t layer, int64_t n_layers);

// The type llama.cpp stores a matrix in when its rows of n_cols values are not whole blocks
// of `type`: `type` itself when they are; else iq4_xs -> iq4_nl, q2_K / q3_K -> q4_0, q4_K ->
// q5_0, q5_K -> q5_1, q6_K -> q8_0, then f16 if the rows are not whole blocks of that either;
// a 32-block type (q4_0 .. q8_0, iq4_nl) -> f16; nullopt for a larger block without a
// fallback (llama.cpp refuses the tensor). (Older llama.cpp sent q2_K / q3_K to iq4_nl and refused
// the 32-block types; tests/llamacpp checks these rules against the release it pins.)
std::optional<DType> llama_quant_block_fallback(DType type, int64_t n_cols);

}  // namespace tally::plan
