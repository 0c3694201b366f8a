// Reference quantizers for the non-linear 4-bit types (IQ4_NL, IQ4_XS): round to the nearest
// of the 16 grid values (kIq4Values) with a covering scale. The grid runs from -127 to +113,
// so as in Q4_0 the block's extreme maps to -127 (its scale takes the opposite sign) and
// values on the other side beyond 113 steps clamp to 113.
#include <cmath>

#include "tensor/quantize_internal.h"

namespace tally::detail {

namespace {

// The code (0..15) whose grid value is nearest to v (ties to the lower code).
int iq4_nearest_code(float v) {
  int best = 0;
  float best_err = std::fabs(v - static_cast<float>(kIq4Values[0]));
  for (int c = 1; c < 16; ++c) {
    const float err = std::fabs(v - static_cast<float>(kIq4Values[c]));
    if (err < best_err) {
      best = c;
      best_err = err;
    }
  }
  return best;
}

// The value of largest magnitude among n, with its sign.
float iq4_extreme(const float* x, int n) {
  float extreme = 0.0f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > std::fabs(extreme)) extreme = x[i];
  return extreme;
}

// 32 values with step `step` into 16 bytes of nibbles (low: 0..15, high: 16..31).
void iq4_pack_codes(const float* x, float step, uint8_t* qs) {
  int code[kQBlock];
  for (int i = 0; i < kQBlock; ++i) code[i] = iq4_nearest_code(step != 0.0f ? x[i] / step : 0.0f);
  for (int i = 0; i < kQBlock / 2; ++i)
    qs[i] = static_cast<uint8_t>(code[i] | (code[i + kQBlock / 2] << 4));
}

}  // namespace

void quantize_iq4_nl(const float* src, BlockIQ4_NL* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQBlock;  // [32]
    const float extreme = iq4_extreme(x, kQBlock);
    const uint16_t mag = f16_round_up(std::fabs(extreme) / 127.0f);
    dst[b].d = static_cast<uint16_t>(extreme > 0.0f ? (mag | 0x8000u) : mag);
    iq4_pack_codes(x, f16_to_f32(dst[b].d), dst[b].qs);
  }
}

// Per sub-block of 32 a signed 6-bit scale s - 32 in -31..31 whose step covers the extreme.
void quantize_iq4_xs(const float* src, BlockIQ4_XS* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = src + b * kQKBlock;  // [256]
    float need[8];                        // signed step each sub-block needs
    float max_need = 0.0f;
    for (int j = 0; j < 8; ++j) {
      need[j] = -iq4_extreme(x + 32 * j, 32) / 127.0f;
      max_need = std::max(max_need, std::fabs(need[j]));
    }
    BlockIQ4_XS& out = dst[b];
    out = BlockIQ4_XS{};
    out.d = f16_round_up(max_need / 31.0f);
    const float d = f16_to_f32(out.d);
    for (int j = 0; j < 8; ++j) {
      const int mag = d > 0.0f ? ceil_clamp(std::fabs(need[j]) / d, 31) : 0;
      const int sc = need[j] < 0.0f ? -mag : mag;
      const int s = sc + 32;
      out.scales_l[j / 2] = static_cast<uint8_t>(out.scales_l[j / 2] | ((s & 15) << (4 * (j % 2))));
      out.scales_h = static_cast<uint16_t>(out.scales_h | ((s >> 4) << (2 * j)));
      iq4_pack_codes(x + 32 * j, d * static_cast<float>(sc), out.qs + 16 * j);
    }
  }
}

}  // namespace tally::detail
