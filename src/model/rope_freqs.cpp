#include "model/rope_freqs.h"

#include <algorithm>
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

// YaRN's blend for pair i: the fraction of the original (extrapolated) frequency kept, 1 for
// pairs below the low correction dim (fast: many turns over the original context), 0 above the
// high one (slow), linear in between; times ext_factor.
double yarn_extrapolation_mix(int64_t i, int64_t rope_dim, float base, const RopeScaling& s) {
  // The pair index that turns `turns` times over the original context.
  const auto corr_dim = [&](double turns) {
    return static_cast<double>(rope_dim) *
           std::log(static_cast<double>(s.original_context_length) / (turns * 2.0 * std::numbers::pi)) /
           (2.0 * std::log(static_cast<double>(base)));
  };
  const double low = std::max(0.0, std::floor(corr_dim(s.beta_fast)));
  const double high = std::min(static_cast<double>(rope_dim - 1), std::ceil(corr_dim(s.beta_slow)));
  const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
  return (1.0 - std::clamp(y, 0.0, 1.0)) * s.ext_factor;
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
    if (c.rope_scaling.type == RopeScalingType::kYarn) {
      const double mix = yarn_extrapolation_mix(i, c.rope_dim, c.rope_freq_base, c.rope_scaling);
      f = static_cast<float>(f * ((1.0 - mix) / c.rope_scaling.factor + mix));
    }
    freqs[i] = f;
  }
  return freqs;
}

}  // namespace tally
