// Rope frequencies (radians per position) of each rotated pair, with the model's scaling
// folded in, computed once at load.
//
// Base: freq[i] = 1 / base^(2i / rope_dim), in fp32 with powf as llama2.c's run.c does.
// Then, in order:
//   linear scaling       freq[i] /= factor
//   rope_freqs.weight    freq[i] /= factors[i]   (Llama 3.1 GGUFs store the llama3 factors)
//   llama3 scaling       only when there is no rope_freqs.weight: for wavelength 2*pi/freq,
//                        long waves (> original_ctx / low_freq_factor) are divided by factor,
//                        short ones (< original_ctx / high_freq_factor) kept, and the band in
//                        between interpolated with s = (original_ctx / wavelength - low) / (high - low):
//                        freq = (1 - s) * freq / factor + s * freq.
//   LongRoPE (phi3)      freq[i] /= factors[i], rope_factors_long or _short (Model picks)
//   YaRN                 freq = (1 - mix) * freq / factor + mix * freq, mix = ext_factor x a
//                        ramp over the pair index from 1 below the pair that turns beta_fast
//                        times in the original context (floor) to 0 above the one that turns
//                        beta_slow times (ceil), as the YaRN paper and llama.cpp's ggml_rope_ext.
//                        Its attention factor is not a frequency: ModelConfig::attention_divisor.
#pragma once

#include <span>
#include <vector>

#include "model/model_config.h"

namespace tally {

// freq_factors: rope_freqs.weight or the LongRoPE factors ([rope_dim/2]), or empty.
std::vector<float> rope_frequencies(const ModelConfig& config, std::span<const float> freq_factors);

}  // namespace tally
