// Per-row quantization of activations for the integer kernels. One scalar implementation for
// every ISA path: the int8 values and scales must not depend on the path (see
// matmul_kernels.h). Rounding uses cvtss2si (SSE, baseline x86-64), which rounds to nearest
// even under the default MXCSR, like the vector conversions.
#include <xmmintrin.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/matmul_kernels.h"
#include "base/check.h"

namespace tally::cpu::detail {

namespace {

// q = round(x * (1/d)) for one block of n values; returns the sum of q.
int32_t quantize_block(const float* x, int n, int8_t* q, float* d_out) {
  float amax = 0.0f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  *d_out = d;
  int32_t sum = 0;
  for (int i = 0; i < n; ++i) {
    // cvtss2si returns INT_MIN for NaN and out-of-range values; the clamp keeps q in range.
    const int v = std::clamp(_mm_cvtss_si32(_mm_set_ss(x[i] * id)), -127, 127);
    q[i] = static_cast<int8_t>(v);
    sum += v;
  }
  return sum;
}

}  // namespace

ActForm act_form(DType type) {
  switch (type) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL:
      return ActForm::kBlock32;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
      return ActForm::kBlockK;
    default:
      return ActForm::kFloat;
  }
}

void act_quantize_row32(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums) {
  TALLY_DCHECK(n_in % kActBlock == 0, "n_in {} not a multiple of {}", n_in, kActBlock);
  for (int64_t b = 0; b < n_in / kActBlock; ++b) {
    sums[b] = static_cast<int16_t>(
        quantize_block(x + b * kActBlock, kActBlock, q + b * kActBlock, d + b));
  }
}

void act_block32_offsets(const int16_t* sums, int64_t n, int32_t* sums8, int32_t* minus_8sums,
                         int32_t* minus_128sums) {
  for (int64_t b = 0; b < n; ++b) {
    sums8[b] = 8 * sums[b];
    minus_8sums[b] = -8 * sums[b];
    minus_128sums[b] = -128 * sums[b];
  }
}

void act_quantize_row_k(const float* x, int64_t n_in, int8_t* q, float* d, int16_t* sums) {
  TALLY_DCHECK(n_in % kActBlockK == 0, "n_in {} not a multiple of {}", n_in, kActBlockK);
  for (int64_t b = 0; b < n_in / kActBlockK; ++b) {
    quantize_block(x + b * kActBlockK, kActBlockK, q + b * kActBlockK, d + b);
    for (int g = 0; g < kActBlockK / kActSumGroup; ++g) {
      const int8_t* qg = q + b * kActBlockK + g * kActSumGroup;
      int32_t s = 0;
      for (int i = 0; i < kActSumGroup; ++i) s += qg[i];
      sums[b * (kActBlockK / kActSumGroup) + g] = static_cast<int16_t>(s);
    }
  }
}

}  // namespace tally::cpu::detail
