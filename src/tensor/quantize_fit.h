// Weighted least-squares fits of one group of values to integer levels: the scale searches of
// the error-minimising quantizers (quantize_search*.cpp). Each fit tries a handful of
// candidate steps around the group's range, rounds every value to a level under each, and
// keeps the (scale, offset) that the weighted normal equations give for the best rounding:
// the weighted squared error sum w_i (x_i - value_i)^2 is what is minimised.
// Not a public interface.
#pragma once

#include <cstdint>

namespace tally::detail {

// x ≈ scale * q with q in [q_lo, q_hi] (q_lo = -q_hi - 1: the extreme maps to the side with
// one more level, whichever its sign). Returns the scale (signed; 0 for an all-zero group).
float fit_symmetric_group(const float* x, const float* w, int n, int q_lo, int q_hi);

// x ≈ scale * q - offset with q in [0, q_hi] and scale >= 0. offset >= 0 when
// `offset_nonnegative` (the K-quants' mins are subtracted, as 6-/4-bit magnitudes), free
// otherwise (q4_1 / q5_1's f16 m).
struct AffineFit {
  float scale = 0.0f;
  float offset = 0.0f;
};
AffineFit fit_affine_group(const float* x, const float* w, int n, int q_hi, bool offset_nonnegative);

// Weighted squared error of a group at step `scale` and offset `offset` (x ≈ scale*q - offset),
// each value at its nearest level in [q_lo, q_hi]; the levels go to q (when not null) as
// q - q_lo (0-based).
double group_error(const float* x, const float* w, int n, float scale, float offset, int q_lo, int q_hi,
                   uint8_t* q);

// x ≈ scale * grid[code] over IQ4's 16 grid values. Returns the scale.
float fit_iq4_group(const float* x, const float* w, int n);

// Weighted squared error of a group on the IQ4 grid at `scale`, codes (0..15) to `codes`.
double iq4_group_error(const float* x, const float* w, int n, float scale, uint8_t* codes);

// The weights of a group when no importance is given, and the importance-weighted ones:
// w_i = importance_i * sqrt(sigma2 + x_i^2) with sigma2 the mean square of the block, or
// sqrt(sigma2) + |x_i| without importance (values far from zero matter a little more: they
// carry more of a dot product; these are the weightings llama.cpp describes for its k-quants,
// and on N(0,1) data they cost ~1% RMSE against uniform weights). A group whose importance
// is all zero (a matrix that saw no token) takes the weights without importance. w: [n].
void group_weights(const float* x, const float* importance, int n, float sigma2, float* w);

}  // namespace tally::detail
