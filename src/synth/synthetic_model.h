// `tally convert --synthetic PRESET`: a GGUF file with seeded random weights in the exact
// shapes of a real model, for speed measurements where real weights cannot be downloaded
// (speed does not depend on the weights' values). The file is laid out as llama.cpp's
// converter and llama-quantize would write that model, so llama.cpp loads it too:
//   metadata   general.architecture (llama | qwen2), general.type, general.name,
//              general.description (says the weights are synthetic), <arch>.context_length,
//              embedding_length, block_count, feed_forward_length, attention.head_count,
//              attention.head_count_kv, rope.freq_base, attention.layer_norm_rms_epsilon,
//              [attention.key_length/value_length], general.file_type, llama only:
//              vocab_size and rope.dimension_count; then the vocab file's tokenizer.* keys
//              (synthetic_vocab.h) and general.quantization_version = 2
//   tensors    [rope_freqs.weight], token_embd.weight, blk.N.{attn_norm, attn_q, attn_k,
//              attn_v, [attn_q/k/v.bias], attn_output, ffn_norm, ffn_gate, ffn_up,
//              ffn_down}.weight, output_norm.weight, [output.weight]; ggml dims order
//              ([n_cols, n_rows]); types from quant_scheme.h
//   values     matrices and biases N(0, weight_std); norms 1 + N(0, weight_std); rope_freqs
//              the real Llama 3 factors. Small weights keep every activation finite.
// Memory stays bounded (a few MiB per thread): tensors are generated while the file is
// written, chunk by chunk (row_producer.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "quant/quant_scheme.h"
#include "synth/synthetic_spec.h"
#include "tensor/dtype.h"

namespace tally::synth {

struct SyntheticOptions {
  std::string preset;                      // a plan preset name (plan_preset_names())
  std::optional<SyntheticModelSpec> spec;  // explicit shapes instead of a preset (tests)
  std::string type = "f16";                // quant_scheme_from_name: f32 f16 bf16 q8_0 q4_0 ... q5_k_m
  uint64_t seed = 0;
  std::string vocab_gguf;                  // a GGUF whose tokenizer.* metadata is copied
  std::string output_path;
  int n_threads = 0;                       // 0 = one per hardware thread
  float weight_std = 0.02f;
  // Called as the file is written: tensors written of the total (e.g. a progress bar).
  std::function<void(int64_t done, int64_t total)> on_progress;
};

// One tensor of the file.
struct SyntheticTensor {
  plan::PlanTensor shape;     // name, role, layer, n_cols, n_rows (plan naming)
  std::vector<int64_t> dims;  // ggml order: {n_cols} for vectors, {n_cols, n_rows} for matrices
  DType type = DType::kF32;
};

struct SyntheticSummary {
  std::string model_name;          // general.name
  quant::QuantScheme scheme;
  int64_t n_tensors = 0;
  int64_t n_params = 0;
  int64_t n_vocab = 0;
  int64_t n_file_tokens = 0;       // tokens taken from the vocab file
  int64_t n_placeholder_tokens = 0;
  uint64_t file_bytes = 0;
  int n_threads = 0;
};

// The tensors of `spec` under `scheme`, in file order (rope_freqs.weight first when written).
Result<std::vector<SyntheticTensor>> synthetic_tensors(const SyntheticModelSpec& spec, const quant::QuantScheme& scheme);

Result<SyntheticSummary> write_synthetic_model(const SyntheticOptions& options);

}  // namespace tally::synth
