// How a model's tensors are stored: one ggml type for every matrix, or llama.cpp's q4_k_m /
// q5_k_m mix, with the per-tensor choices llama.cpp's llama-quantize makes
// (llama_tensor_get_type in src/llama-quant.cpp), restricted to the types tally can compute:
//
//   vectors (norms, biases, rope_freqs)  f32, whatever the scheme (llama.cpp quantizes only
//                                        tensors of 2+ dims)
//   f32 / f16 / bf16                     every matrix in that type (convert_hf_to_gguf.py)
//   quantized schemes (q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, iq4_nl, iq4_xs, q4_k_m,
//   q5_k_m):
//     output.weight, or token_embd.weight when the output is tied to it:
//                                        q8_0 stays q8_0; the others give q6_K
//     token_embd.weight (untied)         the base type
//     q4_k_m / q5_k_m: attn_v and ffn_down of layer i get q6_K when
//                  i < L/8 || i >= 7L/8 || (i - L/8) % 3 == 2   (llama.cpp's use_more_bits;
//                  it counts attn_v tensors in layer order, so its index is the layer)
//     everything else                    the base type
//   q2_k, q3_k, iq4_nl and iq4_xs are "pure" schemes (every matrix in that type, the output
//   in q6_K), not llama.cpp's Q2_K / Q3_K_S/M/L / IQ4_* mixes, which also vary attn_v,
//   ffn_down and attn_output.
//   rows that are not whole blocks of the chosen type fall back as llama.cpp does
//     (plan/llama_quant_rules.h, shared with the planner): q6_K -> q8_0; q4_K -> q5_0;
//     q5_K -> q5_1; q2_K / q3_K / iq4_xs -> iq4_nl; then f16 if even that does not fit;
//     32-block rows that are not multiples of 32 are an error, as in llama.cpp.
// Not modelled: llama.cpp's bump of attn_v from q4_K to q5_K in 70B llama models and its MoE
// rules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "plan/plan_model.h"
#include "tensor/dtype.h"

namespace tally::quant {

struct QuantScheme {
  std::string name;           // "f32", "f16", "bf16", "q8_0", "q4_0", ..., "q4_k_m", "q5_k_m"
  DType base = DType::kF16;   // the type of ordinary matrices
  bool k_mix = false;         // q4_k_m / q5_k_m: some attn_v / ffn_down in q6_K
  uint32_t file_type = 1;     // general.file_type, llama.cpp's llama_ftype number
};

// f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, iq4_nl, iq4_xs, q4_k_m, q5_k_m;
// "q4_k" and "q5_k" are aliases of q4_k_m and q5_k_m (as in llama-quantize). Case-insensitive.
Result<QuantScheme> quant_scheme_from_name(std::string_view name);
std::vector<std::string> quant_scheme_names();

bool quant_scheme_is_quantized(const QuantScheme& scheme);

// The type of `tensor` (a tensor of `model.tensors`) under `scheme`; an error when its rows
// cannot be stored in the scheme's type (see above).
Result<DType> quant_scheme_tensor_type(const QuantScheme& scheme, const plan::PlanTensor& tensor,
                                       const plan::PlanModel& model);

}  // namespace tally::quant
