#include "model/rope_freqs.h"

#include <cmath>
#include <numbers>

#include "base/check.h"

namespace tally {

namespace {

float llama3_scale(float freq, const RopeScaling& s) {
  const double orig = static_cast<double>(s.original_context_length);
  const double wavelength = 2.0 * std::numbers::pi / freq;
  const double low_wavelength = orig / s.low_freq_factor;    // longer waves: fully scaled
  const double high_wavelength = orig / s.high_freq_factor;  // shorter waves: kept
  if (wavelength < high_wavelength) return freq;
  if (wavelength > low_wavelength) return static_cast<float>(freq / s.factor);
  const double smooth = (orig / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return static_cast<float>((1.0 - smooth) * freq / s.factor + smooth * freq);
}

}  // namespace

std::vector<float> rope_frequencies(const ModelConfig& c, std::span<const float> freq_factors) {
  const int64_t n_pairs = c.rope_dim / 2;
  TALLY_CHECK(freq_factors.empty() || static_cast<int64_t>(freq_factors.size()) == n_pairs,
              "{} rope frequency factors for {} pairs", freq_factors.size(), n_pairs);
  std::vector<float> freqs(n_pairs);
  for (int64_t i = 0; i < n_pairs; ++i) {
    float f = 1.0f / powf(c.rope_freq_base, static_cast<float>(2 * i) / static_cast<float>(c.rope_dim));
    if (c.rope_scaling.type == RopeScalingType::kLinear) f /= c.rope_scaling.factor;
    if (!freq_factors.empty())
      f /= freq_factors[i];
    else if (c.rope_scaling.type == RopeScalingType::kLlama3)
      f = llama3_scale(f, c.rope_scaling);
    freqs[i] = f;
  }
  return freqs;
}

}  // namespace tally
