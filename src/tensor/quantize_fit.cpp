// Weighted scale searches for one group of values (quantize_fit.h). The approach, in words:
// a group's best step is near the one that maps its extreme to the outermost level, but
// rounding makes the error a ragged function of the step, so ~20 candidate steps a little on
// either side are tried; under each, every value takes its nearest level, and the weighted
// least-squares scale (and offset) for those levels is solved in closed form. The candidate
// with the least weighted error wins; the affine fit also moves the grid (fit_affine_group).
// (Published as the "scale search" of llama.cpp's k-quants; written here from that
// description.)
#include "tensor/quantize_fit.h"

#include <algorithm>
#include <cmath>

#include "tensor/quant_blocks.h"
#include "tensor/quantize_internal.h"

namespace tally::detail {

namespace {

constexpr int kSearchSteps = 10;     // candidates each side of the extreme's step
constexpr float kSearchDelta = 0.1f;  // in levels
constexpr int kRefits = 8;           // re-roundings of the best affine fit, at most

// Nearest level to v in [lo, hi] (ties to even; NaN to lo). Clamped first, then rounded by
// adding and removing 1.5 * 2^23 (exact for |v| < 2^22, in the default rounding mode), which
// the compiler keeps inline where std::nearbyint is a library call: this runs ~50 times per
// weight.
int clamp_level(float v, int lo, int hi) {
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
  const float c = std::min(std::max(v, static_cast<float>(lo)), static_cast<float>(hi));
  const float rounded = c + kMagic;  // (no -ffast-math here: the two additions stay as written)
  return static_cast<int>(rounded - kMagic);
}

// Midpoints between neighbouring grid values: code c is nearest for v in (mid[c-1], mid[c]].
struct Iq4Midpoints {
  float mid[15];
  Iq4Midpoints() {
    for (int c = 0; c < 15; ++c) mid[c] = 0.5f * static_cast<float>(kIq4Values[c] + kIq4Values[c + 1]);
  }
};
const Iq4Midpoints kIq4Mid;

int iq4_nearest(float v) {
  return static_cast<int>(std::upper_bound(kIq4Mid.mid, kIq4Mid.mid + 15, v) - kIq4Mid.mid);
}

float signed_extreme(const float* x, int n) {
  float extreme = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
  return extreme;
}

}  // namespace

void group_weights(const float* x, const float* importance, int n, float sigma2, float* w) {
  double total = 0.0;
  if (importance) {
    // Twice the block's mean square under the root, as llama.cpp's imatrix quantizers use:
    // flatter weights, closer to the importance alone that the imatrix-weighted error counts.
    const float floor2 = 2.0f * sigma2;
    for (int i = 0; i < n; ++i) {
      w[i] = importance[i] * std::sqrt(floor2 + x[i] * x[i]);
      total += w[i];
    }
  }
  if (total > 0.0) return;  // else (no importance, or none for this group): the values alone
  const float rms = std::sqrt(sigma2);
  for (int i = 0; i < n; ++i) w[i] = rms + std::fabs(x[i]);
}

double group_error(const float* x, const float* w, int n, float scale, float offset, int q_lo, int q_hi,
                   uint8_t* q) {
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  double err = 0.0;
  for (int i = 0; i < n; ++i) {
    const int l = scale != 0.0f ? clamp_level((x[i] + offset) * inv, q_lo, q_hi) : std::clamp(0, q_lo, q_hi);
    const float diff = x[i] - (scale * static_cast<float>(l) - offset);
    err += static_cast<double>(w[i]) * diff * diff;
    if (q) q[i] = static_cast<uint8_t>(l - q_lo);
  }
  return err;
}

float fit_symmetric_group(const float* x, const float* w, int n, int q_lo, int q_hi) {
  const float extreme = signed_extreme(x, n);
  if (extreme == 0.0f) return 0.0f;
  double best_gain = -1.0;
  float best_scale = 0.0f;
  // The extreme on the longer side (q_lo) first, then on the shorter one.
  for (const int end : {q_lo, -q_hi}) {
    for (int is = -kSearchSteps; is <= kSearchSteps; ++is) {
      const float iscale = (static_cast<float>(end) + kSearchDelta * static_cast<float>(is)) / extreme;
      double slx = 0.0, sl2 = 0.0;
      for (int i = 0; i < n; ++i) {
        const auto l = static_cast<double>(clamp_level(iscale * x[i], q_lo, q_hi));
        slx += w[i] * l * x[i];
        sl2 += w[i] * l * l;
      }
      // Error at the least-squares scale: sum w x^2 - slx^2 / sl2; so maximise slx^2 / sl2.
      if (sl2 > 0.0 && slx * slx / sl2 > best_gain) {
        best_gain = slx * slx / sl2;
        best_scale = static_cast<float>(slx / sl2);
      }
    }
  }
  return best_scale;
}

namespace {

// The weighted least-squares (scale, offset) for the levels that step 1/iscale from `origin`
// gives each value, and its error less sum w x^2 (the same for every candidate). False when
// the levels do not give a positive scale.
struct AffineCandidate {
  AffineFit fit;
  double err = 0.0;
};

bool fit_levels(const float* x, const float* w, int n, int q_hi, bool offset_nonnegative, float origin, float iscale,
                AffineCandidate* out) {
  double sw = 0.0, sl = 0.0, sl2 = 0.0, sx = 0.0, slx = 0.0;
  for (int i = 0; i < n; ++i) {
    const auto l = static_cast<double>(clamp_level(iscale * (x[i] - origin), 0, q_hi));
    sw += w[i];
    sl += w[i] * l;
    sl2 += w[i] * l * l;
    sx += w[i] * x[i];
    slx += w[i] * l * x[i];
  }
  // x ≈ a * l + b by weighted least squares.
  const double det = sw * sl2 - sl * sl;
  if (!(det > 0.0)) return false;
  double a = (sw * slx - sl * sx) / det;
  double b = (sl2 * sx - sl * slx) / det;
  if (offset_nonnegative && b > 0.0) {
    b = 0.0;
    a = slx / sl2;
  }
  if (!(a > 0.0)) return false;
  out->fit = {static_cast<float>(a), static_cast<float>(-b)};
  // sum w (a l + b - x)^2 from the sums, without sum w x^2.
  out->err = a * a * sl2 + 2 * a * b * sl + b * b * sw - 2 * a * slx - 2 * b * sx;
  return true;
}

}  // namespace

AffineFit fit_affine_group(const float* x, const float* w, int n, int q_hi, bool offset_nonnegative) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (offset_nonnegative) lo = std::min(lo, 0.0f);
  if (hi <= lo) return {0.0f, -lo};
  const auto levels = static_cast<float>(q_hi);
  AffineFit best{(hi - lo) / levels, -lo};  // the covering fit
  double sxx = 0.0;
  for (int i = 0; i < n; ++i) sxx += static_cast<double>(w[i]) * x[i] * x[i];
  double best_err = group_error(x, w, n, best.scale, best.offset, 0, q_hi, nullptr) - sxx;
  const auto consider = [&](float origin, float iscale) {
    AffineCandidate c;
    if (!fit_levels(x, w, n, q_hi, offset_nonnegative, origin, iscale, &c) || !(c.err < best_err)) return false;
    best_err = c.err;
    best = c.fit;
    return true;
  };
  // Where the levels sit matters as much as their step: when one value stretches the range
  // (an outlier), the rest share two or three levels, and which values round together depends
  // on the grid's offset more than on its step. So each step is tried with the grid's bottom
  // level at the low end, then its top level at the high end, then (around the best so far)
  // its bottom level at the best fit's; last, the values are re-rounded to the best fit's
  // levels and refitted while that lowers the error.
  for (int is = -kSearchSteps; is <= kSearchSteps; ++is)
    consider(lo, (levels + kSearchDelta * static_cast<float>(is)) / (hi - lo));
  for (int is = -kSearchSteps; is <= kSearchSteps; ++is) {
    const float iscale = (levels + kSearchDelta * static_cast<float>(is)) / (hi - lo);
    consider(hi - levels / iscale, iscale);
  }
  const float origin = -best.offset;
  if (hi > origin)
    for (int is = -kSearchSteps; is <= kSearchSteps; ++is)
      consider(origin, (levels + kSearchDelta * static_cast<float>(is)) / (hi - origin));
  for (int it = 0; it < kRefits; ++it)
    if (!consider(-best.offset, 1.0f / best.scale)) break;
  return best;
}

double iq4_group_error(const float* x, const float* w, int n, float scale, uint8_t* codes) {
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  double err = 0.0;
  for (int i = 0; i < n; ++i) {
    const int c = iq4_nearest(x[i] * inv);
    const float diff = x[i] - scale * static_cast<float>(kIq4Values[c]);
    err += static_cast<double>(w[i]) * diff * diff;
    if (codes) codes[i] = static_cast<uint8_t>(c);
  }
  return err;
}

float fit_iq4_group(const float* x, const float* w, int n) {
  const float extreme = signed_extreme(x, n);
  if (extreme == 0.0f) return 0.0f;
  double best_gain = -1.0;
  float best_scale = 0.0f;
  // The grid is lopsided (-127 .. 113): the extreme near its far end, a little inside or
  // outside it, then near the near end (a sign flip of the scale), which suits groups whose
  // other side is wide.
  for (const int end : {kIq4Values[0], kIq4Values[15]}) {
    for (int is = -kSearchSteps; is <= kSearchSteps; ++is) {
      const float iscale = (static_cast<float>(end) + static_cast<float>(is)) / extreme;
      double sgx = 0.0, sg2 = 0.0;
      for (int i = 0; i < n; ++i) {
        const auto g = static_cast<double>(kIq4Values[iq4_nearest(iscale * x[i])]);
        sgx += w[i] * g * x[i];
        sg2 += w[i] * g * g;
      }
      if (sg2 > 0.0 && sgx * sgx / sg2 > best_gain) {
        best_gain = sgx * sgx / sg2;
        best_scale = static_cast<float>(sgx / sg2);
      }
    }
  }
  return best_scale;
}

}  // namespace tally::detail
