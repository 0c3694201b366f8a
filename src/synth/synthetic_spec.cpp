#include "synth/synthetic_spec.h"

#include <cmath>

#include "base/ascii.h"
#include "plan/plan_presets.h"

namespace tally::synth {

namespace {

struct HyperRow {
  const char* preset;
  float rope_freq_base;
  float rms_norm_eps;
  bool llama3_rope;  // factor 32, low 1, high 4, original 8192 (Llama 3.2 1B/3B config.json)
  bool head_dim_keys;
  int64_t sliding_window = 0;
  float rope_linear_factor = 0.0f;
};

// rope_theta and rms_norm_eps of each model's config.json (llama2.c's stories110M: run.c's
// 10000 and 1e-5); Gemma 3's sliding_window and linear rope_scaling factor; Phi-3's
// sliding_window (written as llama.cpp's converter writes it; neither tally nor llama.cpp
// applies it to phi3). Presets not listed get 10000 / 1e-5.
constexpr HyperRow kHyper[] = {
    {"llama-2-7b", 10000.0f, 1e-5f, false, false},
    {"llama-2-13b", 10000.0f, 1e-5f, false, false},
    {"llama-2-70b", 10000.0f, 1e-5f, false, false},
    {"llama-3-8b", 500000.0f, 1e-5f, false, false},
    {"llama-3-70b", 500000.0f, 1e-5f, false, false},
    {"llama-3.2-1b", 500000.0f, 1e-5f, true, true},
    {"tinyllama-1.1b", 10000.0f, 1e-5f, false, false},
    {"qwen2.5-0.5b", 1000000.0f, 1e-6f, false, false},
    {"qwen2.5-7b", 1000000.0f, 1e-6f, false, false},
    {"qwen3-8b", 1000000.0f, 1e-6f, false, true},
    {"gemma-3-4b", 1000000.0f, 1e-6f, false, true, 1024, 8.0f},
    {"stories110M", 10000.0f, 1e-5f, false, false},
    {"mistral-7b", 10000.0f, 1e-5f, false, false},
    {"qwen3-30b-a3b", 1000000.0f, 1e-6f, false, true},
    {"mixtral-8x7b", 1000000.0f, 1e-5f, false, false},
    {"moe-mini", 1000000.0f, 1e-5f, false, false},
    {"phi-3-mini", 10000.0f, 1e-5f, false, false, 2047},
};

}  // namespace

Result<SyntheticModelSpec> synthetic_model_spec(std::string_view preset) {
  TALLY_ASSIGN_OR_RETURN(plan::PlanModel shape, plan::plan_preset(preset));
  SyntheticModelSpec spec;
  spec.shape = std::move(shape);
  for (const HyperRow& row : kHyper) {
    if (!ascii_iequals(row.preset, spec.shape.name)) continue;
    spec.rope_freq_base = row.rope_freq_base;
    spec.rms_norm_eps = row.rms_norm_eps;
    if (row.llama3_rope) spec.llama3_rope = Llama3RopeScaling{32.0f, 1.0f, 4.0f, 8192};
    spec.head_dim_keys = row.head_dim_keys;
    spec.sliding_window = row.sliding_window;
    spec.rope_linear_factor = row.rope_linear_factor;
  }
  // Phi-3's vocabulary is Llama 2's SentencePiece one plus 64 added tokens (placeholders here).
  const bool llama2_vocab = (spec.shape.architecture == "llama" && spec.shape.n_vocab == 32000) ||
                            spec.shape.architecture == "phi3";
  spec.default_vocab = llama2_vocab ? "ggml-vocab-llama-spm.gguf" : "ggml-vocab-gpt-2.gguf";
  if (spec.shape.architecture == "phi3") spec.added_tokens = {"<|endoftext|>"};
  return spec;
}

std::vector<float> llama3_rope_factors(int64_t head_dim, float rope_freq_base, const Llama3RopeScaling& s) {
  const float original = static_cast<float>(s.original_context_length);
  const float low_freq_wavelen = original / s.low_freq_factor;
  const float high_freq_wavelen = original / s.high_freq_factor;
  std::vector<float> factors;
  factors.reserve(static_cast<size_t>(head_dim / 2));
  for (int64_t i = 0; i < head_dim; i += 2) {
    const float exponent = static_cast<float>(i) / static_cast<float>(head_dim);
    const float freq = 1.0f / std::pow(rope_freq_base, exponent);
    const float wavelen = 2.0f * static_cast<float>(M_PI) / freq;
    if (wavelen < high_freq_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_freq_wavelen) {
      factors.push_back(s.factor);
    } else {
      const float smooth = (original / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      factors.push_back(1.0f / ((1.0f - smooth) / s.factor + smooth));
    }
  }
  return factors;
}

}  // namespace tally::synth
