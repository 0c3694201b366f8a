// What a synthetic model file is made of besides random weights: the shapes (from the plan
// presets, plan/plan_presets.h, the one source of truth for layers, widths, heads, vocab,
// tied output and qkv bias) and the hyper-parameters llama.cpp's convert_hf_to_gguf.py writes
// for the real model (rope base, rms epsilon, Llama 3 rope scaling, explicit head_dim), which
// are the same for every file of that model and so sit in a small table here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "plan/plan_model.h"

namespace tally::synth {

// HF rope_scaling {rope_type: llama3, ...} (Llama 3.1 / 3.2). llama.cpp's converter turns it
// into a rope_freqs.weight tensor of per-pair divisors instead of metadata keys.
struct Llama3RopeScaling {
  float factor = 8.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int64_t original_context_length = 8192;
};

struct SyntheticModelSpec {
  plan::PlanModel shape;          // architecture, hyper-parameters and tensor list
  float rope_freq_base = 10000.0f;
  float rms_norm_eps = 1e-5f;
  std::optional<Llama3RopeScaling> llama3_rope;  // writes rope_freqs.weight
  bool head_dim_keys = false;     // <arch>.attention.key_length/value_length (config gives head_dim)
  int64_t sliding_window = 0;     // <arch>.attention.sliding_window (gemma); 0: not written
  float rope_linear_factor = 0.0f;  // rope.scaling.type linear with this factor; 0: not written
  // Vocab GGUF under models/ggml-vocab/ that stands in for the model's tokenizer: the real one
  // where it exists (Llama 2 SentencePiece, 32000 tokens), else the closest byte-level BPE
  // available (GPT-2's, padded with placeholder tokens up to the model's vocab size).
  std::string default_vocab = "ggml-vocab-llama-spm.gguf";
  // Texts of the model's added tokens right after the stand-in's (Phi-3's "<|endoftext|>" at
  // 32000: llama.cpp looks it up by text for a model named phi-3); the rest are placeholders.
  std::vector<std::string> added_tokens;
};

// The spec of a plan preset (stories110M, tinyllama-1.1b, llama-3.2-1b, qwen2.5-0.5b,
// llama-2-7b, ... see plan_preset_names()).
Result<SyntheticModelSpec> synthetic_model_spec(std::string_view preset);

// rope_freqs.weight: [head_dim / 2] divisors of the base frequencies, computed as
// convert_hf_to_gguf.py does (fp32 base frequencies; wavelengths shorter than
// original_ctx / high_freq_factor keep 1, longer than original_ctx / low_freq_factor get
// `factor`, and in between 1 / ((1 - s) / factor + s), s = (original_ctx / wavelength - low) /
// (high - low)).
std::vector<float> llama3_rope_factors(int64_t head_dim, float rope_freq_base, const Llama3RopeScaling& scaling);

}  // namespace tally::synth
